# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceSlices parsed once into the allocator's view: devices, counter sets, node selection.

A snapshot of a whole cluster is parsed once and then serves many allocations, so everything the
search needs per device (capacities as quantities, counter consumption, taints) is computed here,
not per candidate. Malformed entries never raise: a slice that cannot be read is skipped and
listed in ``problems``, as the scheduler skips what it cannot use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.k8s_semantics.resources.model_types import (
    Capacity,
    Device,
    NodeSelection,
    Object,
    RequestPolicy,
    Slice,
    Taint,
    attribute_maps,
)
from deckhouse_gpu.k8s_semantics.resources.model_types import is_map as _is_map
from deckhouse_gpu.k8s_semantics.resources.slice_parts import SliceError, SliceParts

__all__ = [
    "Capacity",
    "Device",
    "Inventory",
    "InventoryBuilder",
    "NodeSelection",
    "Object",
    "RequestPolicy",
    "Slice",
    "SliceError",
    "Taint",
    "build_inventory",
    "parse_slice",
]


@dataclass
class Inventory:
    """All slices, indexed for per-node gathering."""

    slices: list[Slice]
    problems: list[str]
    by_pool: dict[tuple[str, str], list[Slice]] = field(default_factory=dict)
    by_node: dict[str, list[Slice]] = field(default_factory=dict)
    not_by_name: list[Slice] = field(default_factory=list)  # allNodes, selectors, per-device

    def __post_init__(self) -> None:
        for item in self.slices:
            self.by_pool.setdefault((item.driver, item.pool), []).append(item)
            if item.selection.node_name and not item.per_device_node_selection:
                self.by_node.setdefault(item.selection.node_name, []).append(item)
            else:
                self.not_by_name.append(item)

    def node_names(self) -> list[str]:
        return sorted(self.by_node)


def _selection(spec: Object) -> NodeSelection:
    selector = spec.get("nodeSelector")
    return NodeSelection(
        node_name=spec.get("nodeName") or None,
        all_nodes=spec.get("allNodes") is True,
        node_selector=selector if isinstance(selector, Mapping) else None,
    )


@dataclass(frozen=True)
class _SliceFields:
    """What every device of a slice takes from the slice, read once per slice."""

    driver: str
    pool: str
    slice_name: str
    per_device: bool
    selection: NodeSelection


def _taints(raw: Any) -> tuple[Taint, ...]:
    return tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in (raw or ())
        if _is_map(t)
    )


_USUAL = frozenset(("name", "attributes", "capacity", "consumesCounters"))  # what the module's devices have


def _device(raw: Object, index: int, fields: _SliceFields, parts: SliceParts) -> Device:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SliceError(f"device {index}: no name")
    capacity = parts.capacity(raw.get("capacity"), name, index)  # its errors before the counters'
    uses = raw.get("consumesCounters")
    consumes = (
        tuple(
            [
                (
                    str(use.get("counterSet")),
                    parts.counters(use.get("counters"), name, ".consumesCounters", (index, place)),
                )
                for place, use in enumerate(uses)
                if _is_map(use)
            ]
        )
        if uses
        else ()
    )
    taints: tuple[Taint, ...] = ()
    allow_multiple = binding_conditions = binds_to_node = False
    if not raw.keys() <= _USUAL:  # only then can it have the rarer fields: four lookups less
        found = raw.get("taints")
        taints = _taints(found) if found else ()
        allow_multiple = raw.get("allowMultipleAllocations") is True
        binding_conditions = bool(raw.get("bindingConditions"))
        binds_to_node = raw.get("bindsToNode") is True
    device = Device(  # by position: a hundred thousand calls, keywords cost a tenth of them
        fields.driver,
        fields.pool,
        name,
        fields.slice_name,
        raw,
        capacity,
        consumes,
        taints,
        allow_multiple,
        binding_conditions,
        _selection(raw) if fields.per_device else fields.selection,
        fields.per_device,
        binds_to_node,
        (fields.driver, fields.pool, name),  # key
    )
    attributes = raw.get("attributes")
    if attributes and type(attributes) is not dict:
        device._attributes = attribute_maps(attributes)  # whatever it is, read as it always was
    return device


def parse_slice(item: Object, parts: SliceParts | None = None) -> Slice:
    """``parts`` shares what repeats with the other slices of one build (``SliceParts``)."""
    parts = SliceParts() if parts is None else parts
    spec = item.get("spec")
    if not isinstance(spec, Mapping):
        raise SliceError("no spec")
    pool = spec.get("pool")
    if not isinstance(pool, Mapping) or not pool.get("name") or not spec.get("driver"):
        raise SliceError("no driver or pool name")
    try:
        generation = int(pool.get("generation", 0))
        count = int(pool.get("resourceSliceCount", 1))
    except (TypeError, ValueError) as error:
        raise SliceError(f"pool generation or resourceSliceCount: {error}") from error
    counter_sets = tuple(
        (str(entry.get("name")), parts.counters(entry.get("counters"), f"sharedCounters {entry.get('name')}"))
        for entry in (spec.get("sharedCounters") or ())
        if isinstance(entry, Mapping)
    )
    fields = _SliceFields(
        driver=str(spec.get("driver")),
        pool=str(pool.get("name")),
        slice_name=str((item.get("metadata") or {}).get("name")),
        per_device=spec.get("perDeviceNodeSelection") is True,
        selection=_selection(spec),
    )
    devices = tuple(
        _device(raw, i, fields, parts) for i, raw in enumerate(spec.get("devices") or ()) if _is_map(raw)
    )
    return Slice(
        name=str((item.get("metadata") or {}).get("name")),
        driver=str(spec["driver"]),
        pool=str(pool["name"]),
        generation=generation,
        slice_count=count,
        selection=fields.selection,
        per_device_node_selection=fields.per_device,
        devices=devices,
        counter_sets=counter_sets,
    )


def build_inventory(slices: Iterable[Object]) -> Inventory:
    return InventoryBuilder().build(slices)


class InventoryBuilder:
    """Builds inventories again and again, parsing only slices that changed since the last one.

    A slice is known by its name and resourceVersion, so a cluster of thousands of slices where
    one node republished costs that node's slices, and the devices of the others keep their
    cached selector results. Slices without a resourceVersion (files) are always parsed.
    """

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], Slice] = {}
        self._lock = threading.Lock()  # the allocation and the audit build from different workers

    def build(self, slices: Iterable[Object]) -> Inventory:
        with self._lock:
            return self._build(slices)

    def _build(self, slices: Iterable[Object]) -> Inventory:
        parsed: list[Slice] = []
        problems: list[str] = []
        kept: dict[tuple[str, str], Slice] = {}
        parts = SliceParts()  # one build's: nothing of a cluster outlives the inventory built from it
        for item in slices:
            meta = (item.get("metadata") or {}) if isinstance(item, Mapping) else {}
            name, version = meta.get("name"), meta.get("resourceVersion")
            key = (str(name), str(version)) if version else None
            known = self._parsed.get(key) if key else None
            if known is not None and key is not None:
                parsed.append(known)
                kept[key] = known
                continue
            try:
                if not isinstance(item, Mapping):
                    raise SliceError("not an object")
                fresh = parse_slice(item, parts)
            except SliceError as error:
                problems.append(f"ResourceSlice {name or '?'} skipped: {error}")
                continue
            parsed.append(fresh)
            if key is not None:
                kept[key] = fresh
        self._parsed = kept
        return Inventory(parsed, problems)
