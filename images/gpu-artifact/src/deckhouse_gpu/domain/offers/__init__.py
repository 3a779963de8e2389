# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a node offers to DRA: devices, counters and ResourceSlice layouts, and the API server's
rules for them."""
