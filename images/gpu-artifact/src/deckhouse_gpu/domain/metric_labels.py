# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The fixed label values of the node components' metrics.

A label takes its value from a short list, or ``other``: a node's series stay few and bounded
whatever the kernel, the API server or NVML reports.
"""

from __future__ import annotations

from collections.abc import Iterable

OTHER = "other"

# Kernel uevent actions of PCI devices, and "overflow": the socket lost events (a rescan follows).
UDEV_ACTIONS = ("add", "remove", "change", "bind", "unbind", "move", "online", "offline", "overflow")
# Failures of an API write, by the error the services see (ports/kube.py).
API_ERRORS = ("NotFound", "AlreadyExists", "Conflict", "Invalid", "Forbidden", "Unavailable")
# NVML failures (ports/nvml.py): the library or driver as a whole, one card unknown, one query.
NVML_ERRORS = ("NVMLUnavailable", "NVMLDeviceNotFound", "NVMLQueryFailed")
# What gpu-handler asks NVML (the methods of ports/nvml.py).
NVML_QUERIES = ("driver", "device_addresses", "snapshot")
# MIG changes and reads gpu-handler makes (the methods of ports/mig.py).
MIG_OPERATIONS = (
    "mig_enabled",
    "set_mig_mode",
    "card_busy",
    "instances",
    "create_instance",
    "destroy_instance",
)
# Outcomes of publishing the node's ResourceSlices.
PUBLISH_RESULTS = ("changed", "unchanged", "error")
# Outcomes of one pass of a loop.
PASS_RESULTS = ("success", "error")


def bounded(value: str, allowed: Iterable[str]) -> str:
    """``value`` when it is one of ``allowed``, else ``other``."""
    return value if value in tuple(allowed) else OTHER


def udev_action(action: str) -> str:
    return bounded(action.lower(), UDEV_ACTIONS)
