# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One device in the search: the rules in the scheduler's order, placing it and taking it back.

``candidate`` holds the checks of the scheduler's candidate loop and ``place`` those of its
allocateDevice, with their effects on the pass and the scheduler's two accounting quirks unless
``strict``. ``alone`` runs the rules of ``place`` in the same order without touching the pass, for
explain; keep the two in step (tests/domain/allocation/test_explain.py checks they agree).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from deckhouse_gpu.k8s_semantics.allocator import constraints, counters, rules
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorMatcher
from deckhouse_gpu.k8s_semantics.allocator.gather import Pool
from deckhouse_gpu.k8s_semantics.allocator.reasons import Reason
from deckhouse_gpu.k8s_semantics.allocator.search_pass import CounterKey, Placed, SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Claim
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState


class Placer:
    def __init__(
        self, semantics: Semantics, matcher: SelectorMatcher, new_share_id: Callable[[], str]
    ) -> None:
        self.semantics = semantics
        self.matcher = matcher
        self.new_share_id = new_share_id
        # The candidate loop checks capacity before allocateDevice (1.34 as well: the real 1.34.9
        # scheduler disagreed with the opposite), so a misfit never charges counters there.
        self.early_capacity = semantics.consumable

    def candidate(
        self,
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        alternative: Alternative,
        device: Device,
    ) -> Reason | None:
        """The candidate loop's checks: binding conditions, in use, selectors, capacity.
        Raises SelectorFailure."""
        reason = rules.binding_conditions(device)
        if reason is None:
            reason = rules.in_use(work, state, claim_index, alternative, device, self.semantics)
        if reason is None:
            reason = rules.selectors(self.matcher, work.selection.get(id(alternative), alternative), device)
        if reason is None and self.early_capacity:
            reason = rules.capacity_fits(work, state, alternative, device, self.semantics)
        return reason

    def alone(
        self,
        work: SearchPass,
        state: AllocatedState,
        claim: Claim,
        alternative: Alternative,
        pool: Pool,
        device: Device,
    ) -> Reason | None:
        """What ``place`` would refuse the device for, judged alone: nothing is charged or added."""
        semantics = self.semantics
        reason = rules.partitionable(device, semantics)
        if reason is None and counters.charges(work, state, device, semantics):
            reason = counters.counters(work, counters.counter_keys(pool, device, semantics), device)
        if reason is None:
            reason = rules.taints(device, alternative, semantics)
        if reason is None:
            reason = constraints.attributes(claim, alternative, device)
        if reason is None:
            reason = rules.capacity_fits(work, state, alternative, device, semantics)
        return reason

    def place(
        self,
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        claim: Claim,
        alternative: Alternative,
        pool: Pool,
        device: Device,
    ) -> Placed | None:
        """allocateDevice: counters, taints, constraints, capacity, in the scheduler's order."""
        semantics = self.semantics
        if rules.partitionable(device, semantics) is not None:
            return None
        keys: list[CounterKey] | None = None
        if counters.charges(work, state, device, semantics):
            keys = counters.counter_keys(pool, device, semantics)
            if counters.counters(work, keys, device) is not None:
                return None
            counters.charge(work, keys, device)
        if (
            rules.taints(device, alternative, semantics) is not None
            or constraints.attributes(claim, alternative, device) is not None
            or not constraints.constrain(work, claim_index, claim, alternative, device, semantics)
        ):
            self._reject(work, keys, device)
            return None
        if rules.capacity_fits(work, state, alternative, device, semantics) is not None:
            constraints.unconstrain(work, claim_index, claim, alternative)
            self._reject(work, keys, device)
            return None
        placed = Placed(alternative, device, charged=keys is not None)
        if device.allow_multiple and semantics.consumable:
            placed.share_id = self.new_share_id()
            placed.consumed = rules.consumed(alternative, device)
            totals = work.sharing.setdefault(device.key, {})
            for name, amount in placed.consumed.items():
                totals[name] = totals.get(name, Fraction(0)) + amount.value
        else:
            work.allocating.add(device.key)
        work.placed[claim_index].append(placed)
        return placed

    def _reject(self, work: SearchPass, keys: list[CounterKey] | None, device: Device) -> None:
        # The scheduler keeps the counters of a device rejected after the counter check (quirk a).
        if keys is not None and self.semantics.strict:
            counters.release(work, keys, device)

    def undo(self, work: SearchPass, claim_index: int, claim: Claim, pool: Pool, placed: Placed) -> None:
        work.placed[claim_index].pop()
        device = placed.device
        constraints.unconstrain(work, claim_index, claim, placed.alternative)
        keys = counters.counter_keys(pool, device, self.semantics) if placed.charged else None
        if placed.share_id is not None:
            totals = work.sharing[device.key]
            for name, amount in (placed.consumed or {}).items():
                totals[name] -= amount.value
            if not any(totals.values()) and all(p.device is not device for c in work.placed for p in c):
                del work.sharing[device.key]
            # The scheduler does not give back a shared device's counters on rollback.
            if keys is not None and self.semantics.strict:
                counters.release(work, keys, device)
            return
        work.allocating.discard(device.key)
        if keys is not None:
            counters.release(work, keys, device)
