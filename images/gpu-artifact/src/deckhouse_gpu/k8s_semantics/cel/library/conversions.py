# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The conversion functions ``int uint double string bool bytes dyn type`` and ``size``, with Go's
``strconv`` syntax for parsing and formatting, as cel-go converts."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.operators import int64, uint64
from deckhouse_gpu.k8s_semantics.cel.values import MAPS, TYPE_IDENTS, CelType, Uint, no_overload, type_name

_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)")
_GO_FLOAT_WORDS: Final = {
    **{word: math.inf for word in ("inf", "+inf", "infinity", "+infinity")},
    **{word: -math.inf for word in ("-inf", "-infinity")},
    "nan": math.nan,
}
# Exact doubles: float64(math.MinInt64), float64(math.MaxInt64) (rounded up to 2^63) and 2^64.
_INT_DOUBLE_MIN: Final = -(2.0**63)
_INT_DOUBLE_MAX: Final = 2.0**63
_UINT_DOUBLE_END: Final = 2.0**64
_GO_BOOLS: Final = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def to_int(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is Uint:
        return int64(int(value), "int")
    if kind is float:
        # cel-go's doubleToInt64Checked (common/types/overflow.go) refuses v <= float64(MinInt64) and
        # v >= float64(MaxInt64), both exactly 2^63 in magnitude: so -2^63 fails though it fits an int64.
        # NaN fails every comparison here, as cel-go refuses it too.
        if not (_INT_DOUBLE_MIN < value < _INT_DOUBLE_MAX):
            raise EvalError("integer overflow in int")
        return int(value)
    if kind is str:
        if not _GO_INT.fullmatch(value):
            raise EvalError(f"cannot convert {value!r} to int")
        return int64(int(value), "int")
    raise no_overload("int", value)


def to_uint(value: Any) -> Uint:
    kind = type(value)
    if kind is int or kind is Uint:
        return uint64(int(value), "uint")
    if kind is float:
        # cel-go's doubleToUint64Checked: v < 0 or v >= 2^64 (and NaN) fail; -0.0 converts to 0.
        if not (0 <= value < _UINT_DOUBLE_END):
            raise EvalError("unsigned integer overflow in uint")
        return Uint(int(value))
    if kind is str:
        if not value.isascii() or not value.isdigit():
            raise EvalError(f"cannot convert {value!r} to uint")
        return uint64(int(value), "uint")
    raise no_overload("uint", value)


def to_double(value: Any) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is Uint:
        return float(value)
    if kind is str:
        word = _GO_FLOAT_WORDS.get(value.lower())
        if word is not None:
            return word
        if not _GO_FLOAT.fullmatch(value):
            raise EvalError(f"cannot convert {value!r} to double")
        return float(value)
    raise no_overload("double", value)


def _format_double(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    point = len(text) + int(exponent)  # the decimal point's position after the first digit
    prefix = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:  # shortest 'g' switches to an exponent from 1e+06
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{prefix}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def to_string(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is Uint:
        return str(int(value))
    if kind is float:
        return _format_double(value)
    if kind is bytes:
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise EvalError("invalid UTF-8 in bytes converted to string") from error
    raise no_overload("string", value)


def to_bool(value: Any) -> bool:
    if type(value) is bool:
        return bool(value)
    if type(value) is str and value in _GO_BOOLS:
        return _GO_BOOLS[value]
    if type(value) is str:
        raise EvalError(f"cannot convert {value!r} to bool")
    raise no_overload("bool", value)


def to_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return bytes(value)
    if type(value) is str:
        return str(value).encode("utf-8")
    raise no_overload("bytes", value)


def type_of(value: Any) -> CelType:
    return TYPE_IDENTS.get(type_name(value)) or CelType(type_name(value))


def size(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is bytes or kind is list or kind in MAPS:
        return len(value)
    raise no_overload("size", value)
