# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The allocator's view of ResourceSlices, as ``model`` builds it: devices, slices, capacities,
taints and node selection. Everything here is read, never changed, once built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity

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


def is_map(value: Any) -> bool:
    # JSON gives dicts; the abstract check (ten times slower) is left for other mappings: a cluster
    # has a hundred thousand devices with a dozen counters each (kubectl gpu, DESIGN.md D12).
    return type(value) is dict or isinstance(value, Mapping)


@dataclass(eq=False, slots=True)
class Device:
    """One device of a slice. Maps of capacities and counters may be shared by devices that
    declare the same ones (``model.SliceParser``): they are read-only."""

    driver: str
    pool: str
    name: str
    slice_name: str
    raw: Object  # the slice's device entry, for CEL
    capacity: Mapping[str, Capacity]
    consumes: tuple[tuple[str, Mapping[str, Quantity]], ...]  # (counterSet, counter -> amount)
    taints: tuple[Taint, ...]
    allow_multiple: bool
    binding_conditions: bool
    selection: NodeSelection  # the device's own (perDeviceNodeSelection) or its slice's
    per_device: bool  # selection is the device's own
    binds_to_node: bool
    key: tuple[str, str, str]  # (driver, pool, name): the search and the claims' state look it up
    cache: dict[Any, Any] = field(default_factory=dict)  # per-engine CEL views and results
    # The attribute maps, built on first use: only constraints and the reports read them, while
    # the selectors read ``raw``; copying a hundred thousand of them up front cost a tenth of
    # ``kubectl gpu capacity``.
    _attributes: Mapping[str, Object] | None = field(default=None, repr=False)

    @property
    def attributes(self) -> Mapping[str, Object]:
        found = self._attributes
        if found is None:
            found = self._attributes = attribute_maps(self.raw.get("attributes"))
        return found


def attribute_maps(raw: Any) -> dict[str, Object]:
    """The entries of a device's ``attributes`` that are maps, by name as text."""
    return {str(k): v for k, v in (raw or {}).items() if is_map(v)}


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
