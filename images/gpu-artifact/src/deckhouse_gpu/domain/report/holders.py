# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which allocated claims hold a device, and which draw from a counter set (DESIGN.md D2 a).

Explain names them when a device is in use or a counter is exhausted; status lists what each
card holds. Built once from every claim's ``status.allocation`` and the parsed slices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory

DeviceKey = tuple[str, str, str]  # driver, pool, device
SetKey = tuple[str, str, str]  # driver, pool, counter set


def claim_ref(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The allocation results of a claim; none when it is not allocated."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    found = (allocation.get("devices") or {}).get("results") or []
    return [result for result in found if isinstance(result, Mapping)]


def result_key(result: Mapping[str, Any]) -> DeviceKey:
    return (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))


@dataclass
class Holders:
    devices: dict[DeviceKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    counter_sets: dict[SetKey, list[str]] = field(default_factory=lambda: defaultdict(list))

    def of_device(self, key: DeviceKey) -> list[str]:
        return sorted(set(self.devices.get(key, ())))

    def of_counter_set(self, key: SetKey) -> list[str]:
        return sorted(set(self.counter_sets.get(key, ())))


def device_index(inventory: Inventory) -> dict[DeviceKey, Device]:
    return {device.key: device for item in inventory.slices for device in item.devices}


def holders(claims: Iterable[Mapping[str, Any]], devices: Mapping[DeviceKey, Device]) -> Holders:
    """Who holds what: a device allocated to a claim (shares included), and the counter sets its
    devices consume from, as the slices say (a device no longer published draws from none)."""
    found = Holders()
    for claim in claims:
        ref = claim_ref(claim)
        for result in results(claim):
            if result.get("adminAccess") is True:
                continue  # holds nothing: the scheduler ignores it when counting (F4.3)
            key = result_key(result)
            found.devices[key].append(ref)
            device = devices.get(key)
            for set_name, _ in device.consumes if device is not None else ():
                found.counter_sets[(key[0], key[1], set_name)].append(ref)
    return found
