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

from deckhouse_gpu.domain.apimachinery.quantity import Quantity, QuantityError

Object = Mapping[str, Any]


@dataclass(frozen=True)
class RequestPolicy:
    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


@dataclass(frozen=True)
class Capacity:
    value: Quantity
    policy: RequestPolicy | None = None


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class NodeSelection:
    """Where a slice (or, with perDeviceNodeSelection, a device) is available."""

    node_name: str | None = None
    all_nodes: bool = False
    node_selector: Object | None = None


@dataclass(eq=False)
class Device:
    driver: str
    pool: str
    name: str
    slice_name: str
    raw: Object  # the slice's device entry, for CEL
    attributes: Mapping[str, Object]
    capacity: Mapping[str, Capacity]
    consumes: tuple[tuple[str, Mapping[str, Quantity]], ...]  # (counterSet, counter -> amount)
    taints: tuple[Taint, ...]
    allow_multiple: bool
    binding_conditions: bool
    selection: NodeSelection  # the device's own (perDeviceNodeSelection) or its slice's
    per_device: bool  # selection is the device's own
    binds_to_node: bool
    cache: dict[Any, Any] = field(default_factory=dict)  # per-engine CEL views and results

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)


@dataclass(frozen=True)
class Slice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    selection: NodeSelection
    per_device_node_selection: bool
    devices: tuple[Device, ...]
    counter_sets: tuple[tuple[str, Mapping[str, Quantity]], ...]

    @property
    def has_counters(self) -> bool:
        return bool(self.counter_sets)


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


class SliceError(ValueError):
    pass


def _is_map(value: Any) -> bool:
    # JSON gives dicts; the abstract check (ten times slower) is left for other mappings: a cluster
    # has a hundred thousand devices with a dozen counters each (kubectl gpu, DESIGN.md D12).
    return type(value) is dict or isinstance(value, Mapping)


def _quantity(text: Any, where: str, name: Any = None) -> Quantity:
    """``where`` (and ``name``) say where the value is, worded only when it is refused."""
    if type(text) is str:
        try:
            return Quantity.parse(text)
        except QuantityError as error:
            raise SliceError(f"{where if name is None else f'{where}.{name}'}: {error}") from error
    if isinstance(text, int) and not isinstance(text, bool):
        return Quantity.of(text)
    raise SliceError(f"{where if name is None else f'{where}.{name}'}: {text!r} is not a quantity")


def _policy(raw: Any, where: str) -> RequestPolicy | None:
    if not _is_map(raw):
        return None
    found = raw.get("validRange")
    valid_range: Mapping[str, Any] = found if _is_map(found) else {}

    def bound(key: str) -> Quantity | None:
        value = valid_range.get(key)
        return None if value is None else _quantity(value, f"{where}.validRange.{key}")

    return RequestPolicy(
        default=_quantity(raw["default"], f"{where}.default") if raw.get("default") is not None else None,
        valid_values=tuple(
            _quantity(v, f"{where}.validValues[{i}]") for i, v in enumerate(raw.get("validValues") or ())
        ),
        min=bound("min"),
        max=bound("max"),
        step=bound("step"),
    )


def _counters(raw: Any, where: str) -> dict[str, Quantity]:
    counters: dict[str, Quantity] = {}
    for name, entry in (raw or {}).items():
        counters[str(name)] = _quantity(entry.get("value") if _is_map(entry) else None, where, name)
    return counters


def _selection(spec: Object) -> NodeSelection:
    selector = spec.get("nodeSelector")
    return NodeSelection(
        node_name=spec.get("nodeName") or None,
        all_nodes=spec.get("allNodes") is True,
        node_selector=selector if isinstance(selector, Mapping) else None,
    )


def _device(raw: Object, item: Object, spec: Object, index: int) -> Device:
    where = f"device {index}"
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SliceError(f"{where}: no name")
    capacity = {}
    for key, entry in (raw.get("capacity") or {}).items():
        if not _is_map(entry):
            raise SliceError(f"{where} {name}: capacity {key} is not an object")
        capacity[str(key)] = Capacity(
            _quantity(entry.get("value"), f"{name}.capacity.{key}"),
            _policy(entry.get("requestPolicy"), f"{name}.capacity.{key}.requestPolicy"),
        )
    consumes = tuple(
        (str(use.get("counterSet")), _counters(use.get("counters"), f"{name}.consumesCounters"))
        for use in (raw.get("consumesCounters") or ())
        if _is_map(use)
    )
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in (raw.get("taints") or ())
        if _is_map(t)
    )
    per_device = spec.get("perDeviceNodeSelection") is True
    return Device(
        driver=str(spec.get("driver")),
        pool=str((spec.get("pool") or {}).get("name")),
        name=name,
        slice_name=str((item.get("metadata") or {}).get("name")),
        raw=raw,
        attributes={str(k): v for k, v in (raw.get("attributes") or {}).items() if _is_map(v)},
        capacity=capacity,
        consumes=consumes,
        taints=taints,
        allow_multiple=raw.get("allowMultipleAllocations") is True,
        binding_conditions=bool(raw.get("bindingConditions")),
        selection=_selection(raw) if per_device else _selection(spec),
        per_device=per_device,
        binds_to_node=raw.get("bindsToNode") is True,
    )


def parse_slice(item: Object) -> Slice:
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
        (str(entry.get("name")), _counters(entry.get("counters"), f"sharedCounters {entry.get('name')}"))
        for entry in (spec.get("sharedCounters") or ())
        if isinstance(entry, Mapping)
    )
    devices = tuple(
        _device(raw, item, spec, i) for i, raw in enumerate(spec.get("devices") or ()) if _is_map(raw)
    )
    return Slice(
        name=str((item.get("metadata") or {}).get("name")),
        driver=str(spec["driver"]),
        pool=str(pool["name"]),
        generation=generation,
        slice_count=count,
        selection=_selection(spec),
        per_device_node_selection=spec.get("perDeviceNodeSelection") is True,
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
                fresh = parse_slice(item)
            except SliceError as error:
                problems.append(f"ResourceSlice {name or '?'} skipped: {error}")
                continue
            parsed.append(fresh)
            if key is not None:
                kept[key] = fresh
        self._parsed = kept
        return Inventory(parsed, problems)
