# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A node's pools, gathered the way the scheduler gathers them (KUBERNETES-FACTS.md F4.2).

Only the newest generation of a pool counts. 1.34 uses an incomplete pool for ExactCount; 1.35
re-reads the whole pool, drops it when a newer generation exists elsewhere and never allocates
from an incomplete one. Invalid pools abort the allocation on 1.34 and are skipped on 1.35.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from deckhouse_gpu.k8s_semantics.allocator.node_match import Node, selection_matches
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory, Slice
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics

CounterSets = dict[str, Mapping[str, Quantity]]


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    candidates: list[Device]  # devices on this node, in slice then device order
    devices: list[Device]  # every device of the pool's newest generation (counter accounting)
    counters: dict[str, CounterSets]  # counter scope -> counter sets
    incomplete: bool = False
    invalid: str | None = None

    def scope(self, device: Device, semantics: Semantics) -> str:
        """Where the device's counters live: the pool (1.35) or its own slice (1.34)."""
        return "" if semantics.pool_counters else device.slice_name


@dataclass
class Gathered:
    pools: list[Pool] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)  # 1.35: skipped invalid pools, for the error


def _usable(item: Slice, semantics: Semantics) -> bool:
    if not semantics.partitionable:
        if item.per_device_node_selection:
            return False
        if semantics.pool_counters and item.has_counters:
            return False
    return True


def _on_node(item: Slice, node: Node) -> bool:
    if item.per_device_node_selection:
        return any(selection_matches(d.selection, node) for d in item.devices)
    return selection_matches(item.selection, node)


def _node_devices(slices: list[Slice], node: Node, semantics: Semantics) -> list[Device]:
    found: list[Device] = []
    for item in slices:
        if not item.per_device_node_selection:  # its devices have no selection of their own
            found += item.devices
            continue
        for device in item.devices:
            if device.per_device and not selection_matches(device.selection, node):
                continue
            found.append(device)
    return found


def _duplicates(devices: list[Device]) -> str | None:
    if len({device.name for device in devices}) == len(devices):
        return None  # the usual answer, asked for every node a report counts
    seen: set[str] = set()
    for device in devices:
        if device.name in seen:
            return f"duplicate device name {device.name}"
        seen.add(device.name)
    return None


def _counter_problem(slices: list[Slice]) -> str | None:
    sets: dict[str, Mapping[str, Quantity]] = {}
    for item in slices:
        for name, counters in item.counter_sets:
            if name in sets:
                return f"duplicate counter set {name}"
            sets[name] = counters
    for item in slices:
        for device in item.devices:
            for set_name, counters in device.consumes:
                if set_name not in sets:
                    return f"device {device.name} consumes from missing counter set {set_name}"
                # Asked of every device of every node a report counts: the keys' own comparison
                # first, the sorted difference only when something is missing.
                if counters.keys() <= sets[set_name].keys():
                    continue
                missing = sorted(set(counters) - set(sets[set_name]))
                if missing:
                    return f"device {device.name} consumes missing counter {set_name}/{missing[0]}"
    return None


def gather(inventory: Inventory, node: Node, semantics: Semantics) -> Gathered:
    matched: dict[tuple[str, str], list[Slice]] = {}
    for item in [*inventory.by_node.get(node.name, ()), *inventory.not_by_name]:
        if _usable(item, semantics) and _on_node(item, node):
            matched.setdefault((item.driver, item.pool), []).append(item)
    gathered = Gathered()
    for key in sorted(matched):
        on_node = matched[key]
        if semantics.slices_by_name:
            on_node = sorted(on_node, key=lambda item: item.name)
        pool: Pool | None
        if not semantics.pool_counters:
            pool = _pool_134(key, on_node, node, semantics)
        else:
            counter_slices = [s for s in inventory.by_pool[key] if s.has_counters and _usable(s, semantics)]
            pool = _pool_135(key, on_node, counter_slices, inventory.by_pool[key], node, semantics)
        if pool is None:
            continue
        if pool.invalid and semantics.pool_counters:
            gathered.invalid.append(f"{pool.driver}/{pool.name}: {pool.invalid}")
            continue
        gathered.pools.append(pool)
    return gathered


def _newest(slices: list[Slice]) -> tuple[int, list[Slice]]:
    generation = max(s.generation for s in slices)
    return generation, [s for s in slices if s.generation == generation]


def _pool_134(key: tuple[str, str], on_node: list[Slice], node: Node, semantics: Semantics) -> Pool:
    generation, kept = _newest(on_node)
    devices = _node_devices(kept, node, semantics)
    return Pool(
        driver=key[0],
        name=key[1],
        generation=generation,
        candidates=devices,
        devices=devices,
        counters={s.name: dict(s.counter_sets) for s in kept},
        incomplete=len(kept) != kept[0].slice_count,
        invalid=_duplicates(devices),
    )


def _pool_135(
    key: tuple[str, str],
    on_node: list[Slice],
    counter_slices: list[Slice],
    whole_pool: list[Slice],
    node: Node,
    semantics: Semantics,
) -> Pool | None:
    seen = {id(s): s for s in [*on_node, *counter_slices]}
    generation, kept = _newest(list(seen.values()))
    matched = {id(s) for s in on_node}
    node_slices = [s for s in kept if id(s) in matched or _on_node(s, node)]
    loaded = kept
    if len(kept) != kept[0].slice_count:
        newest = max(s.generation for s in whole_pool)
        if newest > generation:
            return None  # obsolete: a newer generation is being published
        loaded = [s for s in whole_pool if s.generation == generation and _usable(s, semantics)]
        if len(loaded) != kept[0].slice_count:
            return Pool(key[0], key[1], generation, [], [], {}, incomplete=True)
    candidates = _node_devices([s for s in node_slices if s.devices], node, semantics)
    every = [d for s in loaded for d in s.devices]
    sets: CounterSets = {}
    for item in loaded:
        sets.update(dict(item.counter_sets))
    return Pool(
        driver=key[0],
        name=key[1],
        generation=generation,
        candidates=candidates,
        devices=every,
        counters={"": sets},
        invalid=_duplicates(candidates) or _counter_problem(loaded),
    )
