# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Counters of partitionable devices (KUBERNETES-FACTS.md F4.4): what each counter set has left before
the call, the counters rule, and charging and giving back a device's consumption in the pass.
"""

from __future__ import annotations

from fractions import Fraction

from deckhouse_gpu.k8s_semantics.allocator.gather import Gathered, Pool
from deckhouse_gpu.k8s_semantics.allocator.reasons import CounterSetMissing, CountersExhausted, Reason
from deckhouse_gpu.k8s_semantics.allocator.search_pass import CounterKey, SearchPass
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

ZERO = Fraction(0)
_NONE: dict[str, Fraction] = {}


def counter_keys(pool: Pool, device: Device, semantics: Semantics) -> list[CounterKey]:
    """The key of each counter set the device consumes from, in its consumesCounters order."""
    pool_key = f"{pool.driver}/{pool.name}"
    scope = pool.scope(device, semantics)
    return [(pool_key, scope, set_name) for set_name, _ in device.consumes]


def availability(
    gathered: Gathered, state: AllocatedState, semantics: Semantics
) -> dict[CounterKey, dict[str, Fraction]]:
    available: dict[CounterKey, dict[str, Fraction]] = {}
    for pool in gathered.pools:
        for scope, sets in pool.counters.items():
            for set_name, counters in sets.items():
                key = (f"{pool.driver}/{pool.name}", scope, set_name)
                available[key] = {name: q.value for name, q in counters.items()}
        for device in pool.devices:
            charged = device.key in state.in_use
            if semantics.strict and device.key in state.shares:
                charged = True  # strict: a shared device holds its counters for every share
            if not charged:
                continue
            for key, (_, counters) in zip(
                counter_keys(pool, device, semantics), device.consumes, strict=True
            ):
                left = available.get(key)
                if left is None:
                    continue
                for name, amount in counters.items():
                    if name in left:
                        left[name] -= amount.value
    return available


def charges(work: SearchPass, state: AllocatedState, device: Device, semantics: Semantics) -> bool:
    """Whether placing the device charges its counters.

    A shared device is charged for its first share only: later shares of this pass skip the
    check, and shares of earlier passes were charged (strict) or not at all (the scheduler,
    quirk b) when the availability was computed.
    """
    if not device.consumes:
        return False
    if device.allow_multiple and semantics.consumable:
        return device.key not in state.shares and device.key not in work.sharing
    return True


def counters(work: SearchPass, keys: list[CounterKey], device: Device) -> Reason | None:
    """Whether every counter the device consumes still fits what is left after this pass."""
    # A counter set named twice by one device (the API forbids it, files may not) adds up.
    earlier: dict[tuple[CounterKey, str], Fraction] | None = {} if len(keys) > 1 else None
    for key, (set_name, amounts) in zip(keys, device.consumes, strict=True):
        left = work.available.get(key)
        if left is None:
            return CounterSetMissing(set_name)
        using = work.consuming.get(key, _NONE)
        for name, amount in amounts.items():
            taken = using.get(name, ZERO)
            if earlier is not None:
                taken += earlier.get((key, name), ZERO)
                earlier[(key, name)] = earlier.get((key, name), ZERO) + amount.value
            have = left.get(name)
            if have is None:
                return CountersExhausted(set_name, name, amount, ZERO, taken)
            if taken + amount.value > have:
                return CountersExhausted(set_name, name, amount, have, taken)
    return None


def charge(work: SearchPass, keys: list[CounterKey], device: Device) -> None:
    for key, (_, amounts) in zip(keys, device.consumes, strict=True):
        using = work.consuming.setdefault(key, {})
        for name, amount in amounts.items():
            using[name] = using.get(name, ZERO) + amount.value


def release(work: SearchPass, keys: list[CounterKey], device: Device) -> None:
    for key, (_, amounts) in zip(keys, device.consumes, strict=True):
        using = work.consuming.get(key)
        if using is None:
            continue
        for name, amount in amounts.items():
            using[name] = using.get(name, ZERO) - amount.value
