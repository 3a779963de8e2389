# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How many devices of the cluster a DeviceClass selects, where they are and what holds them,
whether or not any is free: the first thing to know when nothing of a class fits (``kubectl gpu
explain``), and what tells a class that matches nothing from one that is only full (``capacity``).

Devices are judged by the class's selectors alone, group by group of devices that look alike
(``SelectorGroups``), so a hundred thousand devices cost a few evaluations per class.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from deckhouse_gpu.domain.report.holders import Holders
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.claims import DeviceClass
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory

ANY_NODE = "(several nodes)"  # a device of a slice with allNodes or a node selector


@dataclass
class ClassDevices:
    device_class: str
    gpu_class: str | None = None  # the GPUClass that owns the DeviceClass
    per_node: dict[str, int] = field(default_factory=dict)  # devices it selects, by node
    held: dict[str, list[str]] = field(default_factory=dict)  # device -> claims holding it
    error: str | None = None  # a selector that fails on the cluster's devices

    @property
    def total(self) -> int:
        return sum(self.per_node.values())


def _node(device: Device) -> str:
    return device.selection.node_name or ANY_NODE


def class_devices(
    groups: SelectorGroups,
    inventory: Inventory,
    classes: Sequence[DeviceClass],
    owners: dict[str, str],
    holders: Holders | None = None,
) -> list[ClassDevices]:
    """Per class, the devices its selectors accept; with ``holders``, who holds each of them."""
    devices: list[Device] = [device for item in inventory.slices for device in item.devices]
    found = []
    for device_class in classes:
        entry = ClassDevices(device_class.name, owners.get(device_class.name))
        for device in _selected(groups, device_class.selectors, devices, entry):
            entry.per_node[_node(device)] = entry.per_node.get(_node(device), 0) + 1
            held = holders.of_device(device.key) if holders is not None else []
            if held:
                entry.held[device.name] = held
        found.append(entry)
    return found


def _selected(
    groups: SelectorGroups, selectors: Sequence[str], devices: Iterable[Device], entry: ClassDevices
) -> list[Device]:
    selected = []
    for device in devices:
        verdict = groups.all_of(selectors, device)
        if verdict is None:
            entry.error = f"a selector of DeviceClass {entry.device_class} fails on device {device.name}"
            continue
        if verdict:
            selected.append(device)
    return selected
