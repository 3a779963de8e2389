# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a GPUClass finds among the published devices: the cards of the nodes its node selector
picks, and how many devices its DeviceClass selects now.

Only the driver's pools and only each pool's newest generation count: while gpu-handler
republishes a node, the slices of the old generation are on their way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from deckhouse_gpu.domain.gpuclass.render import DRIVER
from deckhouse_gpu.domain.gpuclass.status import Matching
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure, SelectorMatcher
from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import Selector
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory


def _current(inventory: Inventory) -> Iterable[tuple[str | None, Device]]:
    newest: dict[str, int] = {}
    for item in inventory.slices:
        if item.driver == DRIVER:
            newest[item.pool] = max(newest.get(item.pool, item.generation), item.generation)
    for item in inventory.slices:
        if item.driver == DRIVER and item.generation == newest[item.pool]:
            for device in item.devices:
                yield item.selection.node_name, device


def card_uuids(
    inventory: Inventory, selector: Selector, node_labels: Callable[[str], Mapping[str, str] | None]
) -> list[str]:
    """The UUIDs of the cards published on nodes the selector picks; ``node_labels`` returns None
    for a node that is not (or no longer) there, which picks nothing."""
    found: set[str] = set()
    picked: dict[str, bool] = {}
    for node, device in _current(inventory):
        if not node:
            continue
        if node not in picked:
            labels = node_labels(node)
            picked[node] = labels is not None and selector.matches(labels)
        entry = device.attributes.get("uuid") or {}
        uuid = entry.get("string")
        if picked[node] and isinstance(uuid, str) and uuid:
            found.add(uuid)
    return sorted(found)


def matching(inventory: Inventory, expression: str, matcher: SelectorMatcher) -> Matching:
    devices = errors = 0
    nodes: set[str] = set()
    for node, device in _current(inventory):
        try:
            if not matcher.matches(expression, device):
                continue
        except SelectorFailure:
            errors += 1
            continue
        devices += 1
        if node:
            nodes.add(node)
    return Matching(devices, len(nodes), errors, tuple(sorted(nodes)))
