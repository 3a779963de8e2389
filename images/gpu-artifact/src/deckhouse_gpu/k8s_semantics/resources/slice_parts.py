# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The parts of a ResourceSlice that repeat: amounts, counter maps and capacities.

A cluster repeats a few dozen of them over and over: 500 nodes of 8 H100 declare 104,000 devices
but 26 distinct consumptions, every card the same counter set and every MIG profile the same
capacity. ``SliceParts`` parses each distinct one once, for one build of the inventory, and hands
the same read-only map to every device that declares it; ``kubectl gpu capacity`` spent half its
time parsing them again (DESIGN.md D12). A part is recognised by its text, so it is only shared
where parsing it again would give the same map: names and amounts as text, maps as JSON gives
them (YAML and JSON hold no str subclasses); anything else is parsed every time, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.resources.model_types import Capacity, RequestPolicy, is_map

_NONE: Mapping[str, Any] = MappingProxyType({})


class SliceError(ValueError):
    pass


def quantity(text: Any, where: str, name: Any = None) -> Quantity:
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
    if not is_map(raw):
        return None
    found = raw.get("validRange")
    valid_range: Mapping[str, Any] = found if is_map(found) else {}

    def bound(key: str) -> Quantity | None:
        value = valid_range.get(key)
        return None if value is None else quantity(value, f"{where}.validRange.{key}")

    return RequestPolicy(
        default=quantity(raw["default"], f"{where}.default") if raw.get("default") is not None else None,
        valid_values=tuple(
            quantity(v, f"{where}.validValues[{i}]") for i, v in enumerate(raw.get("validValues") or ())
        ),
        min=bound("min"),
        max=bound("max"),
        step=bound("step"),
    )


def parse_counters(raw: Any, where: str) -> dict[str, Quantity]:
    counters: dict[str, Quantity] = {}
    for name, entry in (raw or {}).items():
        counters[str(name)] = quantity(entry.get("value") if is_map(entry) else None, where, name)
    return counters


def parse_capacity(raw: Any, device: str, index: int) -> dict[str, Capacity]:
    capacity = {}
    for key, entry in (raw or {}).items():
        if not is_map(entry):
            raise SliceError(f"device {index} {device}: capacity {key} is not an object")
        capacity[str(key)] = Capacity(
            quantity(entry.get("value"), f"{device}.capacity.{key}"),
            _policy(entry.get("requestPolicy"), f"{device}.capacity.{key}.requestPolicy"),
        )
    return capacity


def _plain(raw: dict[Any, Any], policy: bool) -> bool:
    """Every entry is a JSON object whose ``value`` is text, under a name that is text (and,
    with ``policy``, without a requestPolicy): a map that its text tells whole."""
    return all(
        type(name) is str
        and type(entry) is dict
        and type(entry.get("value")) is str
        and (not policy or entry.get("requestPolicy") is None)
        for name, entry in raw.items()
    )


class SliceParts:
    """The counter maps and capacities of one build, each parsed once and shared read-only.

    The key of a map is its (name, amount) pairs in order, read without any check; a map is
    only remembered when it is plain (``_plain``), so a key found is one of a plain map, and a
    map whose key equals it is that same text, parsed into the same values. Anything that is
    not plain, or that breaks reading the key, is parsed in full, with the errors it always had.

    Before the key, a part is compared with the plain one last seen at the same place (a
    device's index in its slice): the slices of alike cards and nodes repeat their parts there,
    and comparing two maps (``==``, and their names in order) takes a fraction of building a key.
    Equal to a plain map means the same names in the same order, each with the same text.
    """

    def __init__(self) -> None:
        self._counters: dict[Any, Mapping[str, Quantity]] = {}
        self._capacities: dict[Any, Mapping[str, Capacity]] = {}
        self._last: dict[Any, tuple[Any, tuple[Any, ...], Mapping[str, Any]]] = {}

    def counters(self, raw: Any, where: str, suffix: str = "", place: Any = None) -> Mapping[str, Quantity]:
        """``where`` + ``suffix`` say where the counters are, worded only when one is refused."""
        if not raw:
            return _NONE  # None, {} or anything else empty: no counters, as always
        last = self._last.get(place) if place is not None else None
        if last is not None and last[0] == raw and last[1] == tuple(raw):
            return last[2]
        key = None
        if type(raw) is dict:
            try:
                key = tuple([(name, entry["value"]) for name, entry in raw.items()])
                found = self._counters.get(key)
            except (KeyError, TypeError):  # a name without a value, a value that is not a map
                key = None
            else:
                if found is not None:
                    self._remember(place, raw, found)
                    return found
        parsed: Mapping[str, Quantity] = MappingProxyType(parse_counters(raw, where + suffix))
        if key is not None and _plain(raw, policy=False):
            self._counters[key] = parsed
            self._remember(place, raw, parsed)
        return parsed

    def capacity(self, raw: Any, device: str, index: int) -> Mapping[str, Capacity]:
        if not raw:
            return _NONE
        place = ("capacity", index)
        last = self._last.get(place)
        if last is not None and last[0] == raw and last[1] == tuple(raw):
            return last[2]
        key = None
        if type(raw) is dict:
            try:
                key = tuple(
                    [(name, entry["value"], entry.get("requestPolicy")) for name, entry in raw.items()]
                )
                found = self._capacities.get(key)
            except (KeyError, TypeError, AttributeError):  # as above, or a policy (not hashable)
                key = None
            else:
                if found is not None:
                    self._remember(place, raw, found)
                    return found
        parsed: Mapping[str, Capacity] = MappingProxyType(parse_capacity(raw, device, index))
        if key is not None and _plain(raw, policy=True):
            self._capacities[key] = parsed
            self._remember(place, raw, parsed)
        return parsed

    def _remember(self, place: Any, raw: dict[Any, Any], parsed: Mapping[str, Any]) -> None:
        """``raw`` is plain: its key was found, or it was checked."""
        if place is not None:
            self._last[place] = (raw, tuple(raw), parsed)
