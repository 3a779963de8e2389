# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu capacity``: how many more claims of one device of each DeviceClass fit, per node
and in the cluster, as the module's allocator places them (``allocation.capacity_of``).

Nodes are counted one by one, each from what is allocated now; the cluster's figure is their sum.
Each class also says how many devices of the cluster it selects at all (``devices``), used or not,
so that a class that matches nothing is told from one that is only full, and which GPUClass owns
it.
Devices several nodes can reach (slices with ``allNodes`` or a node selector; the module
publishes none) are counted on each of those nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from deckhouse_gpu.domain.allocation.capacity_of import CapacityCounter, probe
from deckhouse_gpu.domain.report.class_devices import ANY_NODE, class_devices
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.claims import DeviceClass
from deckhouse_gpu.k8s_semantics.resources.model import Inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState


@dataclass
class ClassCapacity:
    device_class: str
    total: int = 0
    nodes: dict[str, int] = field(default_factory=dict)  # nodes with room for at least one claim
    errors: dict[str, str] = field(default_factory=dict)  # nodes where the allocator failed
    unlimited: list[str] = field(default_factory=list)  # nodes with a device shared without end
    devices: int = 0  # devices of the cluster (of the nodes counted) its selectors accept, used or not
    gpu_class: str | None = None  # the GPUClass that owns the DeviceClass


def capacity(
    inventory: Inventory,
    classes: Mapping[str, DeviceClass],
    state: AllocatedState,
    semantics: Semantics,
    nodes: Sequence[Node],
    owners: Mapping[str, str] | None = None,
) -> list[ClassCapacity]:
    """One entry per class, by name. ``semantics`` must be strict (see ``capacity_of``);
    ``owners``: DeviceClass -> the GPUClass that owns it."""
    matcher = CelMatcher(consumable_capacity=semantics.consumable)
    allocator = Allocator(inventory, semantics, matcher)
    ordered = [classes[name] for name in sorted(classes)]
    groups = SelectorGroups(matcher, [e for c in ordered for e in c.selectors])
    probes = [probe(device_class, allocator) for device_class in ordered]
    counter = CapacityCounter(allocator, state, groups)
    owners = owners or {}
    found = {c.name: ClassCapacity(c.name, gpu_class=owners.get(c.name)) for c in ordered}
    counted = {n.name for n in nodes}
    for selected in class_devices(groups, inventory, ordered, dict(owners)):
        found[selected.device_class].devices = sum(
            count for node, count in selected.per_node.items() if node in counted or node == ANY_NODE
        )
    for node in sorted(nodes, key=lambda n: n.name):
        for count in counter.count(probes, node):
            entry = found[count.device_class]
            if count.fits:
                entry.nodes[count.node] = count.fits
                entry.total += count.fits
            if count.error:
                entry.errors[count.node] = count.error
            if count.unlimited:
                entry.unlimited.append(count.node)
    return [found[c.name] for c in ordered]
