# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's node loop: NVML capabilities and health into PhysicalGPUs, offers into ResourceSlices."""
