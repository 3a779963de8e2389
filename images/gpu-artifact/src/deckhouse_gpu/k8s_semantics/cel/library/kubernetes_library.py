# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes' Quantity and Semver libraries: ``quantity isQuantity sign isInteger asInteger
asApproximateFloat add sub``, ``semver isSemver major minor patch`` (``semver`` with optional
normalize), and ``isGreaterThan isLessThan compareTo`` for both. ``==`` compares them by value
(see ``operators``); the ordering operators are refused on them."""

from __future__ import annotations

from typing import Any, cast

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.cel.errors import EvalError
from deckhouse_gpu.k8s_semantics.cel.library.semver import Semver
from deckhouse_gpu.k8s_semantics.cel.values import no_overload, require_types


def parse_quantity(text: Any) -> Quantity:
    if type(text) is not str:
        raise no_overload("quantity", text)
    try:
        return Quantity.parse(text)
    except QuantityError as error:
        raise EvalError(str(error)) from error


def is_quantity(text: Any) -> bool:
    if type(text) is not str:
        raise no_overload("isQuantity", text)
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


def quantity_receiver(function: str, value: Any, *args: Any) -> Quantity:
    if type(value) is not Quantity:
        raise no_overload(function, value, *args)
    return value


def _q_operand(function: str, value: Any, other: Any) -> Quantity:
    if type(other) is int:
        return Quantity.of(other)
    if type(other) is not Quantity:
        raise no_overload(function, value, other)
    return other


def quantity_add(value: Any, other: Any) -> Quantity:
    return quantity_receiver("add", value, other).add(_q_operand("add", value, other))


def quantity_sub(value: Any, other: Any) -> Quantity:
    return quantity_receiver("sub", value, other).sub(_q_operand("sub", value, other))


def as_integer(value: Any) -> int:
    quantity = quantity_receiver("asInteger", value)
    if not quantity.is_integer():
        raise EvalError(f"cannot convert value to integer: {quantity} is not a whole int64")
    return quantity.as_integer()


def parse_semver(text: Any, normalize: Any = False) -> Semver:
    require_types("semver", (str, bool), text, normalize)
    try:
        return Semver.parse(text, normalize)
    except ValueError as error:
        raise EvalError(f"could not parse semver: {error}") from error


def is_semver(text: Any, normalize: Any = False) -> bool:
    require_types("isSemver", (str, bool), text, normalize)
    try:
        Semver.parse(text, normalize)
    except ValueError:
        return False
    return True


def semver_receiver(function: str, value: Any) -> Semver:
    if type(value) is not Semver:
        raise no_overload(function, value)
    return value


def compare_to(function: str, value: Any, other: Any) -> int:
    """compareTo / isGreaterThan / isLessThan of two Quantities or two Semvers."""
    kind = type(value)
    if (kind is Quantity or kind is Semver) and type(other) is kind:
        return cast(Quantity | Semver, value).compare(other)
    raise no_overload(function, value, other)
