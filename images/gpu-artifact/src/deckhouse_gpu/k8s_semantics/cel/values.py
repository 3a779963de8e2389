# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL values at runtime: the Python types that stand for CEL's, their type names, map keys, and
the "no such overload" error of a function applied to the wrong types.

A CEL int is a Python int and a uint a :class:`Uint`; double, string, bytes, bool, null, list and
map are float, str, bytes, bool, None, list and dict; ``kubernetes.Quantity`` and
``kubernetes.Semver`` are :class:`Quantity` and :class:`Semver`.
"""

from __future__ import annotations

import math
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.semver import Semver

INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
UINT_MAX: Final = 2**64 - 1


class Uint(int):
    """A CEL uint (a plain Python int is a CEL int)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value, as ``type(x)`` returns and ``int``, ``string``... name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


class DomainMap(dict[str, Any]):
    """``device.attributes`` and ``device.capacity``: an unknown domain reads as an empty map."""

    __slots__ = ()


class Device(dict[str, Any]):
    """The ``device`` variable (an object: fields, not keys)."""

    __slots__ = ()


class _BoolKey:
    """A bool map key, kept apart from the ints 0 and 1 that Python would merge it with."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BoolKey) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("bool", self.value))


_TRUE_KEY, _FALSE_KEY = _BoolKey(True), _BoolKey(False)


EMPTY_MAP: Final[dict[Any, Any]] = {}


MAPS: Final = frozenset[type]((dict, DomainMap, Device))


TYPE_NAMES: Final[dict[type, str]] = {
    bool: "bool",
    int: "int",
    Uint: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    type(None): "null_type",
    list: "list",
    dict: "map",
    DomainMap: "map",
    Device: "kubernetes.DRADevice",
    Quantity: "kubernetes.Quantity",
    Semver: "kubernetes.Semver",
    CelType: "type",
}
TYPE_IDENTS: Final = {
    name: CelType(name)
    for name in ("bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type")
}


def type_name(value: object) -> str:
    return TYPE_NAMES.get(type(value), type(value).__name__)


def no_overload(function: str, *args: object) -> EvalError:
    return EvalError(f"no such overload: {function}({', '.join(type_name(a) for a in args)})")


def require_types(function: str, kinds: tuple[type, ...], *values: Any) -> None:
    if len(values) != len(kinds) or any(type(v) is not k for v, k in zip(values, kinds, strict=True)):
        raise no_overload(function, *values)


def map_key(key: Any) -> Any:
    kind = type(key)
    if kind is str or kind is int or kind is Uint:
        return key
    if kind is bool:
        return _TRUE_KEY if key else _FALSE_KEY
    if kind is float and not math.isnan(key) and key.is_integer():
        return int(key)  # heterogeneous lookup: 1.0 finds the key 1
    if kind is float:
        return key  # never found
    raise EvalError(f"unsupported map key type: {type_name(key)}")


def unkey(key: Any) -> Any:
    return key.value if type(key) is _BoolKey else key
