# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceSlices, DeviceClasses and ResourceClaims as the scheduler's structured allocator reads them,
and which scheduler (version, feature gates) it mirrors."""
