# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What an API server with DRA feature gates off does to ResourceSlices: it drops the fields.

DRAPartitionableDevices off drops ``sharedCounters`` and ``devices[].consumesCounters``;
DRAConsumableCapacity off drops ``allowMultipleAllocations`` and capacity ``requestPolicy``;
DRADeviceTaints off drops ``devices[].taints``; DRAResourceClaimDeviceStatus off drops a
ResourceClaim's ``status.devices``. A gate left on keeps its fields, as ``MemoryKube``
does without a filter. Used by the tests and the simulator through ``MemoryKube.drop_fields``.
(The real server keeps taints with the gate off when the stored slice already has some, a gate
switched off under a running cluster; the simulated one starts with its gates as they stay.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from deckhouse_gpu.ports.kube import Object, Resource


def gates_off(
    *,
    partitionable: bool = False,
    consumable: bool = False,
    taints: bool = False,
    device_status: bool = False,
) -> Callable[[Resource, Object], Object]:
    """A field filter for the gates named True (those are off)."""

    def drop(resource: Resource, obj: Object) -> Object:
        if resource.group != "resource.k8s.io":
            return obj
        if resource.plural == "resourceclaims":
            if not device_status or "devices" not in (obj.get("status") or {}):
                return obj
            obj = copy.deepcopy(obj)
            del obj["status"]["devices"]
            return obj
        if resource.plural != "resourceslices":
            return obj
        obj = copy.deepcopy(obj)
        spec = obj.get("spec") or {}
        if partitionable:
            spec.pop("sharedCounters", None)
        for device in spec.get("devices") or []:
            if partitionable:
                device.pop("consumesCounters", None)
            if taints:
                device.pop("taints", None)
            if consumable:
                device.pop("allowMultipleAllocations", None)
                for capacity in (device.get("capacity") or {}).values():
                    capacity.pop("requestPolicy", None)
        return obj

    return drop
