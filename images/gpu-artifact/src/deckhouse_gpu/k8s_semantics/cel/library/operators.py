# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL's operators on runtime values: heterogeneous equality, ordering, and int64 / uint64
arithmetic with overflow errors and Go's truncating division and modulus.

Across the numeric types, equality and ordering compare as cel-go's common/types/compare.go does
(compareDoubleInt, compareDoubleUint; Kubernetes' cel-go): int with uint exactly; an int or uint
with a double by the double's sign where it lies beyond the integer type's range, otherwise by
converting the integer to a double, which rounds, so ``dyn(9223372036854775807) <
9223372036854775808.0`` is false and ``9007199254740993 == 9007199254740992.0`` true. A NaN equals
nothing and cannot be ordered (an error, as in cel-go's Compare).
"""

from __future__ import annotations

import math
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.semver import Semver
from deckhouse_gpu.k8s_semantics.cel.values import (
    INT_MAX,
    INT_MIN,
    MAPS,
    UINT_MAX,
    CelType,
    Uint,
    no_overload,
)

_SCALARS: Final = frozenset({str, int, Uint, bool, float, bytes, type(None), CelType})
_NUMBERS: Final = frozenset({int, Uint, float})
_ORDERED: Final = frozenset({int, Uint, float, str, bytes, bool})
# float64(math.MinInt64), float64(math.MaxInt64) (2^63, rounded up) and float64(math.MaxUint64) (2^64).
_INT_DOUBLE_MIN: Final = -(2.0**63)
_INT_DOUBLE_MAX: Final = 2.0**63
_UINT_DOUBLE_MAX: Final = 2.0**64


def values_equal(left: Any, right: Any) -> bool:
    """``==`` as cel-go's heterogeneous equality; the left operand's type decides."""
    left_type, right_type = type(left), type(right)
    if left_type is right_type and left_type in _SCALARS:
        return bool(left == right)
    if left_type is Quantity or left_type is Semver:
        if right_type is left_type:
            return bool(left == right)
        if right is None:
            return False
        raise no_overload("_==_", left, right)
    if left_type in _NUMBERS and right_type in _NUMBERS:  # of different types: one is handled above
        return not (_is_nan(left) or _is_nan(right)) and _compare_numbers(left, right) == 0
    if left_type is list and right_type is list:
        return len(left) == len(right) and all(nested_equal(a, b) for a, b in zip(left, right, strict=True))
    if left_type in MAPS and right_type in MAPS:
        if len(left) != len(right):
            return False
        return all(key in right and nested_equal(value, right[key]) for key, value in left.items())
    return False


def nested_equal(left: Any, right: Any) -> bool:
    try:
        return values_equal(left, right)
    except EvalError:
        return False


def compare(function: str, left: Any, right: Any) -> int:
    """-1, 0 or 1 as ``left`` orders before, with or after ``right``; an error unless ``<``, ``<=``,
    ``>`` and ``>=`` are defined between the two values."""
    left_type, right_type = type(left), type(right)
    if left_type is right_type and left_type in _ORDERED:
        if left_type is float and (math.isnan(left) or math.isnan(right)):
            raise EvalError("NaN values cannot be ordered")
        return int(left > right) - int(left < right)
    if left_type in _NUMBERS and right_type in _NUMBERS:
        if _is_nan(left) or _is_nan(right):
            raise EvalError("NaN values cannot be ordered")
        return _compare_numbers(left, right)
    raise no_overload(function, left, right)


def _is_nan(value: Any) -> bool:
    return type(value) is float and math.isnan(value)


def _compare_numbers(left: Any, right: Any) -> int:
    """Two numbers of different numeric types, neither NaN, compared as cel-go compares them."""
    if type(left) is float:
        return -_compare_double(right, left)
    if type(right) is float:
        return _compare_double(left, right)
    return int(left > right) - int(left < right)  # int with uint: exact


def _compare_double(integer: int, double: float) -> int:
    """cel-go's compareIntDouble / compareUintDouble: the range check, then a rounding conversion."""
    low, high = (_INT_DOUBLE_MIN, _INT_DOUBLE_MAX) if type(integer) is int else (0.0, _UINT_DOUBLE_MAX)
    if double < low:
        return 1
    if double > high:
        return -1
    converted = float(integer)
    return int(converted > double) - int(converted < double)


def int64(value: int, function: str) -> int:
    if INT_MIN <= value <= INT_MAX:
        return value
    raise EvalError(f"integer overflow in {function}")


def uint64(value: int, function: str) -> Uint:
    if 0 <= value <= UINT_MAX:
        return Uint(value)
    raise EvalError(f"unsigned integer overflow in {function}")


def add_values(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return int64(left + right, "_+_")
        if kind is Uint:
            return uint64(left + right, "_+_")
        if kind in (float, str, bytes):
            return left + right
        if kind is list:
            return [*left, *right]
    raise no_overload("_+_", left, right)


def subtract(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return int64(left - right, "_-_")
        if kind is Uint:
            return uint64(left - right, "_-_")
        if kind is float:
            return left - right
    raise no_overload("_-_", left, right)


def multiply(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int:
            return int64(left * right, "_*_")
        if kind is Uint:
            return uint64(left * right, "_*_")
        if kind is float:
            return left * right
    raise no_overload("_*_", left, right)


def divide(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right):
        if kind is int or kind is Uint:
            if right == 0:
                raise EvalError("division by zero")
            quotient = abs(left) // abs(right)  # Go truncates toward zero
            quotient = quotient if (left < 0) == (right < 0) else -quotient
            return int64(quotient, "_/_") if kind is int else Uint(quotient)
        if kind is float:
            try:
                return left / right
            except ZeroDivisionError:
                if left == 0 or math.isnan(left):
                    return math.nan
                return math.copysign(math.inf, left) * math.copysign(1.0, right)
    raise no_overload("_/_", left, right)


def modulo(left: Any, right: Any) -> Any:
    kind = type(left)
    if kind is type(right) and (kind is int or kind is Uint):
        if right == 0:
            raise EvalError("modulus by zero")
        if kind is int and left == INT_MIN and right == -1:
            # Go defines this remainder as 0, but cel-go's moduloInt64Checked (common/types/overflow.go)
            # refuses it as errIntOverflow, like the quotient it goes with.
            raise EvalError("integer overflow in _%_")
        remainder = abs(left) % abs(right)  # Go: the sign of the dividend
        return Uint(remainder) if kind is Uint else (remainder if left >= 0 else -remainder)
    raise no_overload("_%_", left, right)
