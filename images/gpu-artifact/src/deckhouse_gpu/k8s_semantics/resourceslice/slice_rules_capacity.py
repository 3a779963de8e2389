# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Quantities and device capacity, with the consumable-capacity requestPolicy rules.

``parse_quantity`` is public so other code reads quantities the way the API server does. The
requestPolicy rules are those of KUBERNETES-FACTS.md F1.5 (1.35 validation).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import as_list, as_map, check_fields, show

MAX_VALID_VALUES = 10
_QUANTITY_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(|[numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)")
_DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# Not a Kubernetes limit: it keeps a hostile "1e999999999" from costing a huge Fraction.
_MAX_EXPONENT = 1000
_NANO = 10**9


def parse_quantity(text: str) -> Fraction:
    """A Kubernetes quantity (``40Gi``, ``1.5``, ``100m``, ``1e3``) as an exact number.

    Like the API server, non-zero values are rounded up (away from zero) to a multiple of 1n.
    Stricter than the API server: a number needs at least one digit (it reads ``""``, ``"-"``,
    ``"."`` and ``"G"`` as 0), surrounding spaces are not trimmed, and exponents beyond ±1000
    are refused. Values above int64 are not capped as the server does for SI suffixes.
    """
    match = _QUANTITY_RE.fullmatch(text)
    if match is None or not (match[2] or match[3]):
        raise ValueError(f"{show(text)} is not a Kubernetes quantity")
    sign, whole, fraction, suffix = match[1], match[2] or "0", match[3] or "", match[4]
    try:
        magnitude = Fraction(int(whole + fraction), 10 ** len(fraction))
        # "E" and "Ei" are suffixes (exa, exbi); "E3" and "e3" are exponents.
        exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") and suffix[1:] not in ("", "i") else 0
    except ValueError as error:  # more digits than Python converts to int
        raise ValueError(f"{show(text)} is not a Kubernetes quantity") from error
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"{show(text)}: exponent out of the supported range ±{_MAX_EXPONENT}")
    if suffix in _BINARY_SUFFIX:
        magnitude *= 2 ** _BINARY_SUFFIX[suffix]
    else:
        magnitude *= Fraction(10) ** _DECIMAL_SUFFIX.get(suffix, exponent)
    magnitude = Fraction(math.ceil(magnitude * _NANO), _NANO)
    return -magnitude if sign == "-" else magnitude


def integer_value(quantity: Fraction) -> int:
    """``Quantity.Value()``: the integer value, rounded away from zero like the API server."""
    rounded = math.ceil(abs(quantity))
    return -rounded if quantity < 0 else rounded


def quantity_at(value: Any, path: str, out: list[Problem]) -> Fraction | None:
    """A quantity field: a JSON string, or a JSON integer (Kubernetes accepts both)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if not isinstance(value, str):
        out.append(Problem(path, "required" if value is None else f"{show(value)} is not a quantity string"))
        return None
    try:
        return parse_quantity(value)
    except ValueError as error:
        out.append(Problem(path, str(error)))
        return None


def check_capacity(value: Any, path: str, shared: bool, out: list[Problem]) -> None:
    capacity = as_map(value, path, out)
    check_fields(capacity, ("value", "requestPolicy"), path, out)
    if capacity.get("value") is None:
        # The API server would read a missing value as 0; a publisher never means that.
        out.append(Problem(f"{path}.value", "required"))
        limit = None
    else:
        limit = quantity_at(capacity["value"], f"{path}.value", out)
    if capacity.get("requestPolicy") is None:
        return
    policy_path = f"{path}.requestPolicy"
    if not shared:
        out.append(Problem(policy_path, "only allowed when the device sets allowMultipleAllocations: true"))
    policy = as_map(capacity["requestPolicy"], policy_path, out)
    check_fields(policy, ("default", "validValues", "validRange"), policy_path, out)
    has_default = policy.get("default") is not None
    default = quantity_at(policy["default"], f"{policy_path}.default", out) if has_default else None
    values = as_list(policy.get("validValues"), f"{policy_path}.validValues", out)
    if values and policy.get("validRange") is not None:
        out.append(Problem(policy_path, "validValues and validRange are mutually exclusive"))
    elif values:
        _check_valid_values(values, policy_path, has_default, default, limit, out)
    elif policy.get("validRange") is not None:
        _check_valid_range(policy["validRange"], policy_path, default, limit, out)


def _check_valid_values(
    values: list[Any],
    path: str,
    has_default: bool,
    default: Fraction | None,
    limit: Fraction | None,
    out: list[Problem],
) -> None:
    if len(values) > MAX_VALID_VALUES:
        out.append(Problem(f"{path}.validValues", f"has {len(values)} values, more than {MAX_VALID_VALUES}"))
    parsed = [quantity_at(value, f"{path}.validValues[{index}]", out) for index, value in enumerate(values)]
    if not has_default:
        out.append(Problem(f"{path}.default", "required when validValues is set"))
    elif default is not None and default not in parsed:
        out.append(Problem(f"{path}.default", "must be one of validValues"))
    seen: dict[int, int] = {}
    previous: Fraction | None = None
    for index, quantity in enumerate(parsed):
        if quantity is None:
            continue
        item_path = f"{path}.validValues[{index}]"
        if limit is not None and quantity > limit:
            out.append(Problem(item_path, "is larger than the capacity value"))
        # The API server compares duplicates by Quantity.Value(), so 1.2 and 2 collide.
        whole = integer_value(quantity)
        if whole in seen:
            out.append(Problem(item_path, f"duplicates validValues[{seen[whole]}] (compared as integers)"))
        seen.setdefault(whole, index)
        if previous is not None and quantity < previous:
            out.append(Problem(item_path, "validValues must be sorted in ascending order"))
        previous = quantity


def _check_valid_range(
    value: Any, path: str, default: Fraction | None, limit: Fraction | None, out: list[Problem]
) -> None:
    range_path = f"{path}.validRange"
    bounds = as_map(value, range_path, out)
    check_fields(bounds, ("min", "max", "step"), range_path, out)
    if bounds.get("min") is None:
        out.append(Problem(f"{range_path}.min", "required when validRange is set"))
        return
    low = quantity_at(bounds["min"], f"{range_path}.min", out)
    high = quantity_at(bounds["max"], f"{range_path}.max", out) if bounds.get("max") is not None else None
    step = quantity_at(bounds["step"], f"{range_path}.step", out) if bounds.get("step") is not None else None
    if low is None:
        return
    if limit is not None and low > limit:
        out.append(Problem(f"{range_path}.min", "must not be larger than the capacity value"))
    if default is not None and default < low:
        out.append(Problem(f"{path}.default", "must not be smaller than validRange.min"))
    if high is not None:
        if low > high:
            out.append(Problem(f"{range_path}.min", "must not be larger than validRange.max"))
        if limit is not None and high > limit:
            out.append(Problem(f"{range_path}.max", "must not be larger than the capacity value"))
        if default is not None and default > high:
            out.append(Problem(f"{path}.default", "must not be larger than validRange.max"))
    if step is None:
        return
    # The API server does this in integers (Quantity.Value(), rounded up), so 500m counts as 1.
    whole_step, whole_low = integer_value(step), integer_value(low)
    if whole_step <= 0:
        # 1.35 has no such check and would divide by zero; master rejects it.
        out.append(Problem(f"{range_path}.step", "must be positive"))
        return
    if limit is not None and whole_low + whole_step > integer_value(limit):
        out.append(Problem(f"{range_path}.step", "min + step must not be larger than the capacity value"))
    if default is not None and (integer_value(default) - whole_low) % whole_step:
        out.append(Problem(f"{path}.default", "default - min must be a multiple of validRange.step"))
    if high is not None and (integer_value(high) - whole_low) % whole_step:
        out.append(Problem(f"{range_path}.max", "max - min must be a multiple of validRange.step"))
