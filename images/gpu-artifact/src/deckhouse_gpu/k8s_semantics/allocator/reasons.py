# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Why a device fails an allocation rule: what the per-device rules return instead of False.

The search asks only whether a rule failed, for thousands of devices per claim, while explain
needs the words; so a reason keeps the values it would print and words itself only in ``str()``.
Reasons without values are shared instances. ``rule`` names the rule that failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import ClassVar

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.model import Taint

_SHORT = 60


class Rule(StrEnum):
    BINDING_CONDITIONS = "binding conditions"
    IN_USE = "in use"
    SELECTORS = "selectors"
    PARTITIONABLE = "partitionable devices"
    COUNTERS = "counters"
    TAINTS = "taints"
    CONSTRAINTS = "constraints"
    CAPACITY = "capacity"


class Reason:
    __slots__ = ()
    rule: ClassVar[Rule]

    def __str__(self) -> str:
        raise NotImplementedError


class _Fixed(Reason):
    __slots__ = ()
    text: ClassVar[str]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NeedsBindingConditions(_Fixed):
    __slots__ = ()
    rule = Rule.BINDING_CONDITIONS
    text = "needs binding conditions"


class InUse(_Fixed):
    """Allocated to a claim already (outside this allocation)."""

    __slots__ = ()
    rule = Rule.IN_USE
    text = "in use"


class TakenInPass(_Fixed):
    """Taken by an earlier request of the claims being allocated together."""

    __slots__ = ()
    rule = Rule.IN_USE
    text = "already taken in this allocation"


class TakenByClaim(_Fixed):
    """adminAccess may take a device in use, but one claim gets a device once."""

    __slots__ = ()
    rule = Rule.IN_USE
    text = "already allocated to this claim"


class PartitionableOff(_Fixed):
    __slots__ = ()
    rule = Rule.PARTITIONABLE
    text = "consumes counters, but partitionable devices are off"


NEEDS_BINDING_CONDITIONS = NeedsBindingConditions()
IN_USE = InUse()
TAKEN_IN_PASS = TakenInPass()
TAKEN_BY_CLAIM = TakenByClaim()
PARTITIONABLE_OFF = PartitionableOff()


def short(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= _SHORT else flat[: _SHORT - 3] + "..."


@dataclass(frozen=True, slots=True)
class NotOfClass(Reason):
    """A selector of the request's DeviceClass is false. Shared: see ``rules.selectors``."""

    rule: ClassVar[Rule] = Rule.SELECTORS
    device_class: str

    def __str__(self) -> str:
        return f"not of DeviceClass {self.device_class}"


@dataclass(frozen=True, slots=True)
class RequestSelectorFalse(Reason):
    """A selector of the request itself is false. Shared: see ``rules.selectors``."""

    rule: ClassVar[Rule] = Rule.SELECTORS
    expression: str

    def __str__(self) -> str:
        return f"request selector false: {short(self.expression)}"


@dataclass(slots=True)
class SelectorError(Reason):
    """Only explain words this one: the search lets the selector's failure end the attempt."""

    rule: ClassVar[Rule] = Rule.SELECTORS
    error: str

    def __str__(self) -> str:
        return f"selector error: {self.error}"


@dataclass(slots=True)
class CounterSetMissing(Reason):
    rule: ClassVar[Rule] = Rule.COUNTERS
    counter_set: str

    def __str__(self) -> str:
        return f"counter set {self.counter_set} not found"


@dataclass(slots=True)
class CountersExhausted(Reason):
    rule: ClassVar[Rule] = Rule.COUNTERS
    counter_set: str
    counter: str
    needs: Quantity
    available: Fraction  # of the counter set, before this allocation
    taken: Fraction  # by this allocation

    def __str__(self) -> str:
        left = Quantity.exact(max(self.available - self.taken, Fraction(0)), self.needs.binary)
        return f"counters exhausted ({self.counter_set}/{self.counter}: needs {self.needs}, {left} left)"


@dataclass(slots=True)
class TaintNotTolerated(Reason):
    rule: ClassVar[Rule] = Rule.TAINTS
    taint: Taint

    def __str__(self) -> str:
        return f"taint {self.taint.key}={self.taint.value}:{self.taint.effect} not tolerated"


@dataclass(slots=True)
class MissingAttribute(Reason):
    """A device without the attribute a constraint compares never satisfies it."""

    rule: ClassVar[Rule] = Rule.CONSTRAINTS
    attribute: str
    constraint: str  # "matchAttribute" or "distinctAttribute"

    def __str__(self) -> str:
        return f"no attribute {self.attribute} for {self.constraint}"


@dataclass(slots=True)
class NoCapacity(Reason):
    rule: ClassVar[Rule] = Rule.CAPACITY
    capacity: str

    def __str__(self) -> str:
        return f"no capacity {self.capacity}"


@dataclass(slots=True)
class PolicyBroken(Reason):
    rule: ClassVar[Rule] = Rule.CAPACITY
    capacity: str
    amount: Quantity

    def __str__(self) -> str:
        return f"capacity {self.capacity}: {self.amount} breaks the request policy"


@dataclass(slots=True)
class CapacityExhausted(Reason):
    rule: ClassVar[Rule] = Rule.CAPACITY
    capacity: str
    amount: Quantity
    value: Quantity  # the device's capacity
    used: Fraction  # by shares, earlier and in this allocation

    def __str__(self) -> str:
        left = Quantity.exact(max(self.value.value - self.used, Fraction(0)), self.value.binary)
        return f"capacity {self.capacity}: needs {self.amount}, {left} left"
