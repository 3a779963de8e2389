# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Consumable capacity: what a request consumes of a device and whether it fits (KUBERNETES-FACTS.md F4.5)."""

from __future__ import annotations

import math
from fractions import Fraction

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.model import Capacity


def _value(quantity: Quantity) -> int:
    """``Quantity.Value()``: the whole number, rounded up."""
    return math.ceil(quantity.value)


def consumed(capacity: Capacity, requested: Quantity | None) -> Quantity:
    """The amount a request takes, after the request policy's defaulting and rounding."""
    policy = capacity.policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else capacity.value
    if policy is None:
        return requested
    if policy.min is not None:
        if requested.value < policy.min.value:
            return policy.min
        if policy.step is None:
            return requested
        minimum, step = _value(policy.min), _value(policy.step)
        steps = -(-(_value(requested) - minimum) // step) if step > 0 else 0
        return Quantity.exact(minimum + steps * step, binary=True)
    if policy.valid_values:
        for value in sorted(policy.valid_values, key=lambda q: q.value):
            if value.value >= requested.value:
                return value
        return requested
    return requested


def violates(capacity: Capacity, amount: Quantity) -> bool:
    policy = capacity.policy
    if policy is None:
        return False
    if policy.default is not None and amount.value == policy.default.value:
        return False
    if policy.min is not None:
        if policy.max is not None and amount.value > policy.max.value:
            return True
        if policy.step is not None and policy.step.value > 0:
            return (amount.value - policy.min.value) % policy.step.value != Fraction(0)
        return False
    if policy.valid_values:
        return all(amount.value != v.value for v in policy.valid_values)
    return False
