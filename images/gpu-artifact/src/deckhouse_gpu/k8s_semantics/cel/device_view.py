# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CEL ``device`` variable, as ``k8s.io/dynamic-resource-allocation/cel`` declares it
(KUBERNETES-FACTS.md F3):

- ``device.driver``, ``device.attributes`` and ``device.capacity`` (maps of domain -> map of id;
  a key is split at its first ``/``, a key without a domain belongs to the driver's domain), and
  ``device.allowMultipleAllocations`` (absent reads as false), declared only when the
  DRAConsumableCapacity feature is on: otherwise naming it fails to compile;
- ``device.attributes[d]`` / ``device.capacity[d]`` of an unknown domain ``d`` is an empty map (and,
  as upstream overrides ``Find``, ``has(device.attributes.d)`` is true for any ``d`` while
  ``"d" in device.attributes`` and ``size()`` see the real domains); an unknown id inside a domain is
  a "no such key" error;
- attribute values: int, bool, string, and ``version`` as a Semver; capacity values are
  Quantities. A ``version`` that is not a semantic version, or an attribute with no supported value,
  makes every evaluation on that device fail, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.cel.library.semver import Semver
from deckhouse_gpu.k8s_semantics.cel.values import Device, DomainMap

DEVICE_FIELDS: Final = ("driver", "attributes", "capacity")
CONSUMABLE_FIELD: Final = "allowMultipleAllocations"


class DeviceView:
    """The CEL ``device`` variable for one ResourceSlice device, built once and reused."""

    __slots__ = ("_error", "_variables", "name")

    def __init__(self, name: str, variables: dict[str, Any], error: str | None) -> None:
        self.name = name
        self._variables = variables
        self._error = error

    def __repr__(self) -> str:
        return f"DeviceView({self.name!r})"


def _split_key(key: str, driver: str) -> tuple[str, str]:
    domain, slash, name = key.partition("/")
    return (domain, name) if slash else (driver, key)


def attribute_value(key: str, attribute: Any) -> Any:
    """The value of one ResourceSlice attribute; ValueError as upstream's getAttributeValue fails."""
    if not isinstance(attribute, Mapping):
        raise ValueError(f"attribute {key}: unsupported attribute value")
    if attribute.get("int") is not None:
        value = attribute["int"]
        if type(value) is not int:
            raise ValueError(f"attribute {key}: int value {value!r} is not an integer")
        return value
    if attribute.get("bool") is not None:
        if type(attribute["bool"]) is not bool:
            raise ValueError(f"attribute {key}: bool value {attribute['bool']!r} is not a bool")
        return attribute["bool"]
    if attribute.get("string") is not None:
        return str(attribute["string"])
    if attribute.get("version") is not None:
        try:
            return Semver.parse(str(attribute["version"]))
        except ValueError as error:
            raise ValueError(f"attribute {key}: parse semantic version: {error}") from error
    raise ValueError(f"attribute {key}: unsupported attribute value")


def device_view(driver: str, device: Mapping[str, Any], *, consumable_capacity: bool = True) -> DeviceView:
    """The ``device`` variable for one entry of a ResourceSlice's ``spec.devices`` of ``driver``.

    A device that upstream cannot turn into a CEL value (an unparsable version, an attribute with no
    value, a capacity that is not a quantity) gives a view on which every selector fails."""
    attributes, capacity = DomainMap(), DomainMap()
    error = None
    try:
        for key, attribute in (device.get("attributes") or {}).items():
            domain, name = _split_key(str(key), driver)
            attributes.setdefault(domain, {})[name] = attribute_value(str(key), attribute)
        for key, entry in (device.get("capacity") or {}).items():
            domain, name = _split_key(str(key), driver)
            value = entry.get("value") if isinstance(entry, Mapping) else None
            try:
                capacity.setdefault(domain, {})[name] = Quantity.parse(str(value))
            except QuantityError as problem:
                raise ValueError(f"capacity {key}: {problem}") from problem
    except ValueError as problem:
        error = str(problem)
    fields = Device(driver=driver, attributes=attributes, capacity=capacity)
    if consumable_capacity:
        fields[CONSUMABLE_FIELD] = bool(device.get(CONSUMABLE_FIELD) or False)
    return DeviceView(str(device.get("name", "")), {"device": fields}, error)
