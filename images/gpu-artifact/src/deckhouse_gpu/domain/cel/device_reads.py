# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a selector that reads only some values of ``device`` sees of a ResourceSlice device.

``CompiledSelector.device_reads`` names the values an expression can read (DESIGN.md F3.1). For
those, :class:`ReadPlan` gives the values a device's CEL view holds there, in a hashable form and
without building the view, and whether the view is valid at all (``device_view`` gives a view on
which every selector fails otherwise): two devices with equal keys get the same result from every
selector that reads only those values. Keys may be finer than needed (``"1Gi"`` and ``"1024Mi"``
differ), never coarser: that keeps grouping by them exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from deckhouse_gpu.domain.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.domain.cel.compile_base import DeviceRead
from deckhouse_gpu.domain.cel.device_view import CONSUMABLE_FIELD, attribute_value

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
    device's view holds there, with whether the view is valid in front, in one pass over the
    device's attributes (the view is built in key order, so of two keys naming the same entry,
    such as ``deviceType`` and ``gpu.deckhouse.io/deviceType`` of the driver's domain, the later
    one wins)."""

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

    def key(self, device: Mapping[str, Any]) -> tuple[Any, ...]:
        slots: list[Any] = [ABSENT] * self.size
        valid = True
        wanted = self._maps["attributes"]
        for name, attribute in (device.get("attributes") or {}).items():
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
        wanted = self._maps["capacity"]
        for name, entry in (device.get("capacity") or {}).items():
            value = entry.get("value") if isinstance(entry, Mapping) else None
            valid = valid and _valid_quantity(value)
            index = wanted.get(name)
            if index is not None:
                slots[index] = frozen(value)  # the view holds the quantity, nothing of the policy
        for index, field in self._scalars:
            if field == "driver":
                slots[index] = self._driver
            else:
                slots[index] = bool(device.get(CONSUMABLE_FIELD) or False)
        return (valid, *slots)


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
