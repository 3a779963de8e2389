# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a selector that reads only some values of ``device`` sees of a ResourceSlice device.

``CompiledSelector.device_reads`` names the values an expression can read (KUBERNETES-FACTS.md F3.1). For
those, :class:`ReadPlan` gives the values a device's CEL view holds there, in a hashable form and
without building the view, and whether the view is valid at all (``device_view`` gives a view on
which every selector fails otherwise): two devices with equal keys get the same result from every
selector that reads only those values. Keys may be finer than needed (``"1Gi"`` and ``"1024Mi"``
differ), never coarser: that keeps grouping by them exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import DeviceRead
from deckhouse_gpu.k8s_semantics.cel.device_view import CONSUMABLE_FIELD, attribute_value

ABSENT: Final = ("absent",)
_SIMPLE: Final = (str, int, bool, float)


def frozen(value: Any) -> Any:
    """A hashable stand-in for a JSON value that tells apart everything the view tells apart."""
    if type(value) is dict and len(value) == 1:
        ((kind, inner),) = value.items()
        if type(inner) in _SIMPLE:
            return (kind, type(inner).__name__, inner)  # the type: True == 1 in a tuple
    if type(value) in _SIMPLE:
        return (type(value).__name__, value)
    return ("repr", repr(value))


class ReadPlan:
    """The reads of some selectors, for devices of one driver: :meth:`key` gives the values a
    device's view holds there, with whether the view is valid in front. When every attribute
    holds one string or one int (the usual device: its view is valid), only the read names are
    looked up; otherwise the attributes are read in one pass in the device's order (the view is
    built in key order, so of two keys naming the same entry, such as ``deviceType`` and
    ``gpu.deckhouse.io/deviceType`` of the driver's domain, the later one wins), as when a device
    has both."""

    def __init__(self, reads: Sequence[DeviceRead], driver: str) -> None:
        self.size = len(reads)
        self._scalars: list[tuple[int, str]] = []
        self._maps: dict[str, dict[str, int]] = {"attributes": {}, "capacity": {}}
        for index, read in enumerate(reads):
            if len(read) == 1:
                self._scalars.append((index, read[0]))
                continue
            field, domain, ident = read
            self._maps[field][f"{domain}/{ident}"] = index
            if domain == driver and "/" not in ident:
                self._maps[field][ident] = index
        self._driver = driver
        self._attributes = tuple(self._maps["attributes"].items())
        self._consumable = [index for index, field in self._scalars if field != "driver"]
        self._blank: list[Any] = [ABSENT] * self.size  # with the driver where it is read
        for index, field in self._scalars:
            if field == "driver":
                self._blank[index] = driver
        # A capacity's text: whether it is a quantity, and its stand-in in keys (a cluster has a
        # few dozen, on a hundred thousand devices).
        self._amounts: dict[str, tuple[bool, Any]] = {}

    def key(self, device: Mapping[str, Any]) -> tuple[Any, ...]:
        # One function, no calls on the usual path: it runs for every device of a cluster.
        slots = self._blank.copy()
        attributes = device.get("attributes") or {}
        if type(attributes) is dict and _plain(attributes.values()):
            # Every attribute is valid: only the read names are looked up (a device has a dozen
            # attributes or more, selectors read two or three).
            valid = True
            for name, index in self._attributes:
                attribute = attributes.get(name)
                if attribute is not None:
                    if slots[index] is not ABSENT:
                        # Both names of one entry (``deviceType`` and ``<driver>/deviceType``):
                        # the view holds the later one, which only the pass in order knows.
                        slots = self._blank.copy()
                        valid = self._read_all(attributes, slots)
                        break
                    text = attribute.get("string")
                    slots[index] = ("string", text) if type(text) is str else frozen(attribute)
        else:
            valid = self._read_all(attributes, slots)
        capacity = device.get("capacity")
        if capacity:
            wanted = self._maps["capacity"]
            for name, entry in capacity.items():
                value = entry.get("value") if type(entry) is dict or isinstance(entry, Mapping) else None
                known = self._amounts.get(value) if type(value) is str else None
                if known is None:
                    known = (_valid_quantity(value), frozen(value))
                    if type(value) is str:
                        self._amounts[value] = known
                valid = valid and known[0]
                at = wanted.get(name)
                if at is not None:
                    slots[at] = known[1]  # the view holds the quantity, nothing of the policy
        if self._consumable:
            consumable = bool(device.get(CONSUMABLE_FIELD) or False)
            for index in self._consumable:
                slots[index] = consumable
        return (valid, *slots)

    def _read_all(self, attributes: Any, slots: list[Any]) -> bool:
        """Every attribute, in the device's order: whether the view is valid, and the wanted ones."""
        valid = True
        wanted = self._maps["attributes"]
        for name, attribute in attributes.items():
            # The usual entries, one string or one int, are recognised without the full conversion.
            if type(attribute) is dict and len(attribute) == 1:
                text = attribute.get("string")
                if text is None and type(attribute.get("int")) is not int:
                    valid = valid and _valid_attribute(name, attribute)
            else:
                text = None
                valid = valid and _valid_attribute(name, attribute)
            index = wanted.get(name)
            if index is not None:
                slots[index] = ("string", text) if type(text) is str else frozen(attribute)
        return valid


def _plain(attributes: Iterable[Any]) -> bool:
    """Every attribute holds one string or one int, the usual ones: all of them valid."""
    for attribute in attributes:  # subscripts, not get(): a tenth faster, on 17 of them a device
        if type(attribute) is not dict or len(attribute) != 1:
            return False
        if "string" in attribute:
            if attribute["string"] is None:
                return False
        elif "int" not in attribute or type(attribute["int"]) is not int:
            return False
    return True


def _valid_attribute(name: Any, attribute: Any) -> bool:
    try:
        attribute_value(str(name), attribute)
    except ValueError:
        return False
    return True


def _valid_quantity(value: Any) -> bool:
    try:
        Quantity.parse(str(value))
    except QuantityError:
        return False
    return True
