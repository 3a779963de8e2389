# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Field selection, indexing, ``has()``, ``in``, and what a comprehension ranges over, on runtime
values (``device.attributes`` and ``device.capacity`` read an unknown domain as an empty map)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.operators import nested_equal
from deckhouse_gpu.k8s_semantics.cel.values import (
    EMPTY_MAP,
    Device,
    DomainMap,
    Uint,
    map_key,
    no_overload,
    type_name,
    unkey,
)


def select_field(value: Any, name: str) -> Any:
    kind = type(value)
    if kind is dict:
        try:
            return value[name]
        except KeyError:
            raise EvalError(f"no such key: {name}") from None
    if kind is DomainMap:
        return value.get(name, EMPTY_MAP)
    if kind is Device:
        try:
            return value[name]
        except KeyError:
            raise EvalError(f"no such field: {name}") from None
    raise EvalError(f"type '{type_name(value)}' does not support field selection")


def field_present(value: Any, name: str) -> bool:
    kind = type(value)
    if kind is dict or kind is Device:
        return name in value
    if kind is DomainMap:
        return True  # upstream's Find never misses
    raise EvalError(f"invalid type for field selection in has(): {type_name(value)}")


def index_value(value: Any, key: Any) -> Any:
    kind = type(value)
    if kind is DomainMap:
        return value.get(key, EMPTY_MAP) if type(key) is str else EMPTY_MAP
    if kind is dict:
        try:
            return value[map_key(key)]
        except KeyError:
            raise EvalError(f"no such key: {unkey(key)}") from None
    if kind is list:
        key_type = type(key)
        if key_type is float and key.is_integer():
            key = int(key)
        elif key_type is not int and key_type is not Uint:
            raise no_overload("_[_]", value, key)
        if not 0 <= key < len(value):
            raise EvalError(f"index out of bounds: {key}")
        return value[key]
    raise no_overload("_[_]", value, key)


def is_member(item: Any, container: Any) -> bool:
    kind = type(container)
    if kind is list:
        return any(nested_equal(item, element) for element in container)
    if kind is dict or kind is DomainMap:
        try:
            return map_key(item) in container
        except EvalError:
            return False
    raise no_overload("@in", item, container)


def range_items(function: str, value: Any) -> Iterable[Any]:
    """What a comprehension ranges over: a list's elements or a map's keys."""
    kind = type(value)
    if kind is list:
        return cast(list[Any], value)
    if kind is dict or kind is DomainMap:
        return [unkey(k) for k in value]
    raise EvalError(f"{function}: cannot range over {type_name(value)}")


def range_pairs(function: str, value: Any) -> Iterable[tuple[Any, Any]]:
    """What a two-variable comprehension ranges over: (index, element) or (key, value)."""
    kind = type(value)
    if kind is list:
        return list(enumerate(value))
    if kind is dict or kind is DomainMap:
        return [(unkey(k), v) for k, v in value.items()]
    raise EvalError(f"{function}: cannot range over {type_name(value)}")
