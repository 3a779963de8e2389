# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Static types, for the partial type check done while compiling.

Static types are known for literals, the ``device`` fields (attribute values are ``dyn``, capacity
values Quantities), function results and comprehension variables; where both operands of an
operator have known types that cel-go's checker refuses (``map == string``, ``Quantity <
Quantity``, ``int + double``, ``!1``, a non-bool result such as ``1``), the expression fails to
compile, as on a cluster; so do names this engine does not know (variables, functions, device
fields) and wrong argument counts. Argument types of functions are checked only when evaluated, and
an operand of type ``dyn`` is checked at runtime: ``==`` with an unrelated type is false, the other
operators an error, as cel-go evaluates them. Where unsure (``null``, ``int == double``) compilation
is lenient. The allocator evaluates stored objects, which the API server has already checked.
"""

from __future__ import annotations

from typing import Any, Final, cast

from deckhouse_gpu.k8s_semantics.cel.device_view import CONSUMABLE_FIELD
from deckhouse_gpu.k8s_semantics.cel.errors import CompileError
from deckhouse_gpu.k8s_semantics.cel.values import TYPE_NAMES, unkey

# Static types, as far as this engine knows them: a name ("int", "kubernetes.Quantity", ...), a
# ("list", element) or ("map", key, value) tuple, or DYN when only the evaluation can tell.
StaticType = str | tuple[Any, ...]
DYN: Final = "dyn"
NUMERIC_TYPES: Final = frozenset({"int", "uint", "double"})
ORDERED_TYPES: Final = frozenset({"string", "bytes", "bool"})
# The operand types the checker accepts for each arithmetic operator, keyed by its grammar rule.
ARITHMETIC_TYPES: Final = {
    "addition_add": frozenset({"int", "uint", "double", "string", "bytes", "list"}),
    "addition_sub": NUMERIC_TYPES,
    "multiplication_mul": NUMERIC_TYPES,
    "multiplication_div": NUMERIC_TYPES,
    "multiplication_mod": frozenset({"int", "uint"}),
}
_ATTRIBUTES_TYPE: Final = ("map", "string", ("map", "string", DYN))
_CAPACITY_TYPE: Final = ("map", "string", ("map", "string", "kubernetes.Quantity"))
DEVICE_TYPE: Final = "kubernetes.DRADevice"
FIELD_TYPES: Final[dict[str, StaticType]] = {
    "driver": "string",
    "attributes": _ATTRIBUTES_TYPE,
    "capacity": _CAPACITY_TYPE,
    CONSUMABLE_FIELD: "bool",
}
RESULT_TYPES: Final[dict[str, StaticType]] = {
    **dict.fromkeys(("size", "int", "sign", "asInteger", "compareTo", "major", "minor", "patch"), "int"),
    **dict.fromkeys(("indexOf", "lastIndexOf"), "int"),
    "uint": "uint",
    "double": "double",
    "asApproximateFloat": "double",
    **dict.fromkeys(
        ("string", "charAt", "lowerAscii", "upperAscii", "replace", "substring", "trim"), "string"
    ),
    **dict.fromkeys(("join", "find"), "string"),
    "bytes": "bytes",
    "type": "type",
    **dict.fromkeys(
        ("bool", "matches", "contains", "startsWith", "endsWith", "isQuantity", "isSemver"), "bool"
    ),
    **dict.fromkeys(("isInteger", "isGreaterThan", "isLessThan", "isSorted"), "bool"),
    **dict.fromkeys(("sets.contains", "sets.equivalent", "sets.intersects"), "bool"),
    **dict.fromkeys(("quantity", "add", "sub"), "kubernetes.Quantity"),
    "semver": "kubernetes.Semver",
    **dict.fromkeys(("split", "findAll"), ("list", "string")),
}


def type_of_value(value: Any) -> StaticType:
    kind = type(value)
    if kind is list:
        return ("list", common_type([type_of_value(v) for v in value]))
    if kind is dict:
        keys = [type_of_value(unkey(k)) for k in value]
        return ("map", common_type(keys), common_type([type_of_value(v) for v in value.values()]))
    return TYPE_NAMES.get(kind, DYN)


def common_type(types: list[StaticType]) -> StaticType:
    return types[0] if types and all(t == types[0] for t in types) else DYN


def type_text(static: StaticType) -> str:
    if isinstance(static, tuple):
        return f"{static[0]}({', '.join(type_text(t) for t in static[1:])})"
    return static


def compatible(left: StaticType, right: StaticType) -> bool:
    """Whether cel-go's checker could accept ``left == right`` (lenient where unsure)."""
    if DYN in (left, right) or "null_type" in (left, right) or left == right:
        return True
    if left in NUMERIC_TYPES and right in NUMERIC_TYPES:
        return True
    if (
        isinstance(left, tuple)
        and isinstance(right, tuple)
        and len(left) == len(right)
        and left[0] == right[0]
    ):
        return all(compatible(a, b) for a, b in zip(left[1:], right[1:], strict=True))
    return False


def unify(left: StaticType, right: StaticType) -> StaticType | None:
    """The type both operands of ``+`` and the other arithmetic operators share, dyn standing for
    any type (``list(dyn)`` and ``list(int)`` give ``list(dyn)``); None where they share none."""
    if left == right:
        return left
    if DYN in (left, right):
        return DYN
    if (
        isinstance(left, tuple)
        and isinstance(right, tuple)
        and len(left) == len(right)
        and left[0] == right[0]
    ):
        params = [unify(a, b) for a, b in zip(left[1:], right[1:], strict=True)]
        return None if None in params else (left[0], *cast(list[StaticType], params))
    return None


def element_type(container: StaticType) -> StaticType:
    """What indexing a list or map yields; a comprehension's variable over it."""
    if isinstance(container, tuple):
        return cast(StaticType, container[-1])
    return DYN


def range_type(container: StaticType) -> StaticType:
    """A one-variable comprehension's variable: a list's element or a map's key."""
    if isinstance(container, tuple):
        return cast(StaticType, container[1])
    return DYN


def no_matching(function: str, *types: StaticType) -> CompileError:
    return CompileError(
        f"found no matching overload for '{function}' applied to ({', '.join(type_text(t) for t in types)})"
    )


def type_kind(static: StaticType) -> str:
    return static[0] if isinstance(static, tuple) else static
