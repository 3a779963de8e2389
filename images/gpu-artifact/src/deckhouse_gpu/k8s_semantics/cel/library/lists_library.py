# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes' lists extension (``isSorted sum min max``) and sets extension (``sets.contains
sets.equivalent sets.intersects``), compared with CEL's equality and ordering."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.operators import add_values, compare, nested_equal
from deckhouse_gpu.k8s_semantics.cel.values import no_overload, require_types


def _list(function: str, value: Any) -> list[Any]:
    if type(value) is not list:
        raise no_overload(function, value)
    return list(value)


def less(left: Any, right: Any) -> bool:
    return compare("_<_", left, right) < 0


def is_sorted(items: Any) -> bool:
    values = _list("isSorted", items)
    return not any(less(b, a) for a, b in itertools.pairwise(values))


def list_sum(items: Any) -> Any:
    values = _list("sum", items)
    total: Any = 0
    for index, value in enumerate(values):
        total = value if index == 0 else add_values(total, value)
    return total


def extreme(function: str, items: Any, pick_left: Callable[[Any, Any], bool]) -> Any:
    values = _list(function, items)
    if not values:
        raise EvalError(f"{function} called on an empty list")
    best = values[0]
    for value in values[1:]:
        if not pick_left(best, value):
            best = value
    return best


def sets_contains(left: Any, right: Any) -> bool:
    require_types("sets.contains", (list, list), left, right)
    return all(any(nested_equal(a, b) for a in left) for b in right)


def sets_equivalent(left: Any, right: Any) -> bool:
    return sets_contains(left, right) and sets_contains(right, left)


def sets_intersects(left: Any, right: Any) -> bool:
    require_types("sets.intersects", (list, list), left, right)
    return any(nested_equal(a, b) for a in left for b in right)
