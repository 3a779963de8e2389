# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Whether a stored ResourceSlice says what a rendered one says, whatever the API server did to it.

The server stores a slice in its own normal form: it drops empty maps and lists and unset fields
(``"capacity": {}`` of a VFIO card comes back without the key), and prints every quantity in its
canonical spelling (``1024Mi`` as ``1Gi``). A comparison of the raw JSON reads each of those as a
change and rewrites the slice on every pass. Both sides are brought to one form first: empty
values gone, quantities as exact numbers. The pool's generation is left out (it may differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

# Inside capacity and counters, these keys hold quantities (a value, a request policy's default
# and range, the valid values).
_QUANTITY_MAPS = frozenset({"capacity", "counters"})
_QUANTITY_KEYS = frozenset({"value", "default", "min", "max", "step", "validValues"})


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What must match for a stored slice to count as unchanged."""
    spec = dict(obj.get("spec") or {})
    spec["pool"] = {k: v for k, v in (spec.get("pool") or {}).items() if k != "generation"}
    metadata = obj.get("metadata") or {}
    shown = {
        "labels": metadata.get("labels") or {},
        "owners": metadata.get("ownerReferences") or [],
        "spec": spec,
    }
    return {key: _normal(value, False) for key, value in shown.items()}


def _normal(value: Any, quantities: bool) -> Any:
    if isinstance(value, Mapping):
        kept = {}
        for key, item in value.items():
            inner = _normal(item, quantities or key in _QUANTITY_MAPS)
            if quantities and key in _QUANTITY_KEYS:
                inner = _quantity(inner)
            if inner not in (None, {}, [], ""):
                kept[key] = inner
        return kept
    if isinstance(value, list):
        return [_normal(item, quantities) for item in value]
    return value


def _quantity(value: Any) -> Any:
    if isinstance(value, list):
        return [_quantity(item) for item in value]
    if isinstance(value, str):
        try:
            return Fraction(Quantity.parse(value).value)
        except QuantityError:
            return value  # not a quantity after all: compared as written
    return value
