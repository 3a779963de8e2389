"""CEL's operators on runtime values: heterogeneous equality, the ordering check, and int64 / uint64
arithmetic with overflow errors and Go's truncating division and modulus."""

from __future__ import annotations

import math
from typing import Any, Final

from deckhouse_gpu.domain.apimachinery.quantity import Quantity
from deckhouse_gpu.domain.cel.errors import EvalError
from deckhouse_gpu.domain.cel.semver import Semver
from deckhouse_gpu.domain.cel.values import (
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
    if left_type in _NUMBERS and right_type in _NUMBERS:
        return bool(left == right)
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


def ordered(function: str, left: Any, right: Any) -> None:
    """Raises unless ``<``, ``<=``, ``>``, ``>=`` are defined between the two values."""
    left_type, right_type = type(left), type(right)
    if left_type in _NUMBERS and right_type in _NUMBERS:
        return
    if left_type is right_type and left_type in (str, bytes, bool):
        return
    raise no_overload(function, left, right)


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
