# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPU inventory: PhysicalGPU objects, what sysfs and NVML say about each card, its conditions."""
