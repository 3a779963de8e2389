# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node's kernel as files: sysfs PCI devices, VFIO bindings, udev events and the driver root."""
