# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU inventory: gpu-node-agent's passes and gpu-controller's DriverReady."""
