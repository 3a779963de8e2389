# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller: allocation of the claims the scheduler never allocates, the audit, the opaque-
config webhook and GPUClasses."""
