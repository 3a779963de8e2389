# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A card's health: the HardwareHealthy condition, Xid errors, the kubelet's device health and the
Events a change of health or driver gets."""
