# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The function tables: every global function and method the engine knows, the argument counts
each accepts and its size-dependent cost; which calls are folded when their arguments are constant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.compiler.costs import (
    arg_cost,
    contains_cost,
    matches_cost,
    receiver_cost,
    size_of,
)
from deckhouse_gpu.k8s_semantics.cel.library.conversions import (
    size,
    to_bool,
    to_bytes,
    to_double,
    to_int,
    to_string,
    to_uint,
    type_of,
)
from deckhouse_gpu.k8s_semantics.cel.library.kubernetes_library import (
    as_integer,
    compare_to,
    is_quantity,
    is_semver,
    parse_quantity,
    parse_semver,
    quantity_add,
    quantity_receiver,
    quantity_sub,
    semver_receiver,
)
from deckhouse_gpu.k8s_semantics.cel.library.lists_library import (
    extreme,
    is_sorted,
    less,
    list_sum,
    sets_contains,
    sets_equivalent,
    sets_intersects,
)
from deckhouse_gpu.k8s_semantics.cel.library.strings_library import (
    char_at,
    contains,
    ends_with,
    find,
    find_all,
    index_of,
    join,
    last_index_of,
    lower_ascii,
    matches,
    replace,
    split,
    starts_with,
    substring,
    trim,
    upper_ascii,
)

# name -> (implementation, accepted argument counts, extra cost from the arguments or None)
Impl = Callable[..., Any]
CostFn = Callable[..., int] | None
_Entry = tuple[Impl, frozenset[int], CostFn]


def _entry(impl: Impl, *counts: int, cost: CostFn = None) -> _Entry:
    return impl, frozenset(counts), cost


GLOBALS: Final[dict[str, _Entry]] = {
    "size": _entry(size, 1),
    "int": _entry(to_int, 1),
    "uint": _entry(to_uint, 1),
    "double": _entry(to_double, 1),
    "string": _entry(to_string, 1),
    "bool": _entry(to_bool, 1),
    "bytes": _entry(to_bytes, 1),
    "dyn": _entry(lambda value: value, 1),
    "type": _entry(type_of, 1),
    "matches": _entry(matches, 2, cost=matches_cost),
    "quantity": _entry(parse_quantity, 1),
    "isQuantity": _entry(is_quantity, 1),
    "sign": _entry(lambda q: quantity_receiver("sign", q).sign(), 1),
    "semver": _entry(parse_semver, 1, 2),
    "isSemver": _entry(is_semver, 1, 2),
    "sets.contains": _entry(sets_contains, 2, cost=lambda a, b: size_of(a) * size_of(b)),
    "sets.equivalent": _entry(sets_equivalent, 2, cost=lambda a, b: 2 * size_of(a) * size_of(b)),
    "sets.intersects": _entry(sets_intersects, 2, cost=lambda a, b: size_of(a) * size_of(b)),
}

# Method calls: the receiver is the first argument; counts exclude it.
METHODS: Final[dict[str, _Entry]] = {
    "size": _entry(size, 0),
    "matches": _entry(matches, 1, cost=matches_cost),
    "contains": _entry(contains, 1, cost=contains_cost),
    "startsWith": _entry(starts_with, 1, cost=arg_cost),
    "endsWith": _entry(ends_with, 1, cost=arg_cost),
    "charAt": _entry(char_at, 1, cost=receiver_cost),
    "indexOf": _entry(index_of, 1, 2, cost=receiver_cost),
    "lastIndexOf": _entry(last_index_of, 1, 2, cost=receiver_cost),
    "lowerAscii": _entry(lower_ascii, 0, cost=receiver_cost),
    "upperAscii": _entry(upper_ascii, 0, cost=receiver_cost),
    "replace": _entry(replace, 2, 3, cost=receiver_cost),
    "split": _entry(split, 1, 2, cost=receiver_cost),
    "substring": _entry(substring, 1, 2, cost=receiver_cost),
    "trim": _entry(trim, 0, cost=receiver_cost),
    "join": _entry(join, 0, 1, cost=receiver_cost),
    "find": _entry(find, 1, cost=matches_cost),
    "findAll": _entry(find_all, 1, 2, cost=lambda t, p, *_: matches_cost(t, p)),
    "isSorted": _entry(is_sorted, 0, cost=receiver_cost),
    "sum": _entry(list_sum, 0, cost=receiver_cost),
    "min": _entry(lambda items: extreme("min", items, lambda a, b: not less(b, a)), 0, cost=receiver_cost),
    "max": _entry(lambda items: extreme("max", items, lambda a, b: not less(a, b)), 0, cost=receiver_cost),
    "isInteger": _entry(lambda q: quantity_receiver("isInteger", q).is_integer(), 0),
    "asInteger": _entry(as_integer, 0),
    "asApproximateFloat": _entry(lambda q: float(quantity_receiver("asApproximateFloat", q).value), 0),
    "add": _entry(quantity_add, 1),
    "sub": _entry(quantity_sub, 1),
    "compareTo": _entry(lambda a, b: compare_to("compareTo", a, b), 1),
    "isGreaterThan": _entry(lambda a, b: compare_to("isGreaterThan", a, b) > 0, 1),
    "isLessThan": _entry(lambda a, b: compare_to("isLessThan", a, b) < 0, 1),
    "major": _entry(lambda v: semver_receiver("major", v).major, 0),
    "minor": _entry(lambda v: semver_receiver("minor", v).minor, 0),
    "patch": _entry(lambda v: semver_receiver("patch", v).patch, 0),
}

NAMESPACES: Final = frozenset({"sets"})
FOLDABLE: Final = frozenset({"quantity", "semver", "isQuantity", "isSemver"})  # pure, worth folding
