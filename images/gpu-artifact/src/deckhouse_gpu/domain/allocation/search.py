"""The backtracking search of the scheduler's structured allocator (k8s-dra-facts 4.3, 4.4).

Claims are placed together on one node: claim by claim, request by request, device by device in
pool, slice and device order; a subrequest of ``firstAvailable`` is tried with the whole rest of
the search before the next one. The checks of a device run in the scheduler's order (in use,
counters, taints, constraints, capacity), including its two accounting quirks unless ``strict``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.allocation import capacity
from deckhouse_gpu.domain.allocation.checks import (
    SelectorFailure,
    SelectorMatcher,
    attribute,
    selectors_match,
    untolerated_taint,
)
from deckhouse_gpu.domain.allocation.claims import MAX_RESULTS, Alternative, Claim, ClaimError, Constraint
from deckhouse_gpu.domain.allocation.gather import Gathered, Pool, gather
from deckhouse_gpu.domain.allocation.model import Device, Inventory
from deckhouse_gpu.domain.allocation.node_match import Node
from deckhouse_gpu.domain.allocation.result import allocation_result
from deckhouse_gpu.domain.allocation.semantics import Semantics
from deckhouse_gpu.domain.allocation.state import AllocatedState, DeviceKey
from deckhouse_gpu.domain.apimachinery.quantity import Quantity


class AllocationError(Exception):
    """Fatal for the attempt on this node, as the scheduler's Allocate errors are."""


@dataclass
class Placed:
    alternative: Alternative
    device: Device
    share_id: str | None = None
    consumed: dict[str, Quantity] | None = None
    charged: bool = False  # its counters were added in this pass


@dataclass
class Outcome:
    node: str
    allocations: list[dict[str, Any]] | None  # one AllocationResult per claim, in order
    error: str | None = None


CounterKey = tuple[str, str, str]  # pool key "driver/pool", scope (slice on 1.34), counter set


@dataclass
class SearchPass:
    """The state of one Allocate call."""

    node: Node
    gathered: Gathered
    available: dict[CounterKey, dict[str, Fraction]]
    consuming: dict[CounterKey, dict[str, Fraction]] = field(default_factory=dict)
    allocating: set[DeviceKey] = field(default_factory=set)
    sharing: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)  # this call's shares
    placed: list[list[Placed]] = field(default_factory=list)  # per claim
    matched: dict[tuple[int, int], tuple[str, Any]] = field(default_factory=dict)  # (claim, constraint)
    matched_count: dict[tuple[int, int], int] = field(default_factory=dict)
    distinct: dict[tuple[int, int, str], Any] = field(default_factory=dict)
    all_devices: dict[int, list[tuple[Pool, Device]]] = field(default_factory=dict)  # per "All" alternative


class Allocator:
    def __init__(
        self,
        inventory: Inventory,
        semantics: Semantics,
        matcher: SelectorMatcher,
        new_share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.inventory = inventory
        self.semantics = semantics
        self.matcher = matcher
        self.new_share_id = new_share_id

    # -- entry point -------------------------------------------------------------------------

    def allocate(self, claims: Sequence[Claim], node: Node, state: AllocatedState) -> Outcome:
        """All claims on ``node`` or none. ``allocations`` is None when they do not fit;
        ``error`` is set for what the scheduler treats as an error, not as "does not fit"."""
        try:
            gathered = gather(self.inventory, node, self.semantics)
            work = SearchPass(node, gathered, self.availability(gathered, state))
            work.placed = [[] for _ in claims]
            work.all_devices = self._count_all(claims, work, state)
            found = self._place(claims, work, state, 0, 0)
        except (AllocationError, ClaimError) as error:
            return Outcome(node.name, None, str(error))
        except SelectorFailure as error:
            return Outcome(node.name, None, f"CEL selector failed: {error}")
        if not found:
            if gathered.invalid:
                return Outcome(
                    node.name, None, "invalid resource pools were encountered: " + "; ".join(gathered.invalid)
                )
            return Outcome(node.name, None)
        results = [
            allocation_result(claim, placed, node.name, self.semantics)
            for claim, placed in zip(claims, work.placed, strict=True)
        ]
        return Outcome(node.name, results)

    # -- counters ----------------------------------------------------------------------------

    def counter_key(self, pool: Pool, device: Device, counter_set: str) -> CounterKey:
        return (f"{pool.driver}/{pool.name}", pool.scope(device, self.semantics), counter_set)

    def availability(
        self, gathered: Gathered, state: AllocatedState
    ) -> dict[CounterKey, dict[str, Fraction]]:
        available: dict[CounterKey, dict[str, Fraction]] = {}
        for pool in gathered.pools:
            for scope, sets in pool.counters.items():
                for set_name, counters in sets.items():
                    key = (f"{pool.driver}/{pool.name}", scope, set_name)
                    available[key] = {name: q.value for name, q in counters.items()}
            for device in pool.devices:
                charged = device.key in state.in_use
                if self.semantics.strict and device.key in state.shares:
                    charged = True  # strict: a shared device holds its counters for every share
                if not charged:
                    continue
                for set_name, counters in device.consumes:
                    left = available.get(self.counter_key(pool, device, set_name))
                    if left is None:
                        continue
                    for name, amount in counters.items():
                        if name in left:
                            left[name] -= amount.value
        return available

    def _charge(self, work: SearchPass, pool: Pool, device: Device) -> bool:
        """Adds the device's counter consumption if every counter still fits."""
        added: list[tuple[CounterKey, str, Fraction]] = []
        fits = True
        for set_name, counters in device.consumes:
            key = self.counter_key(pool, device, set_name)
            left = work.available.get(key)
            if left is None:
                fits = False
                break
            using = work.consuming.setdefault(key, {})
            for name, amount in counters.items():
                using[name] = using.get(name, Fraction(0)) + amount.value
                added.append((key, name, amount.value))
                if name not in left or using[name] > left[name]:
                    fits = False
        if not fits:
            for key, name, value in added:
                work.consuming[key][name] -= value
        return fits

    def _release(self, work: SearchPass, pool: Pool, device: Device) -> None:
        for set_name, counters in device.consumes:
            using = work.consuming.get(self.counter_key(pool, device, set_name))
            if using is None:
                continue
            for name, amount in counters.items():
                using[name] = using.get(name, Fraction(0)) - amount.value

    # -- capacity ----------------------------------------------------------------------------

    def _capacity(
        self, work: SearchPass, state: AllocatedState, alternative: Alternative, device: Device
    ) -> dict[str, Quantity] | None:
        """What the device would give this request, or None when it does not fit (4.5)."""
        if any(name not in device.capacity for name in alternative.capacity):
            return None
        amounts: dict[str, Quantity] = {}
        shared = state.shares.get(device.key, {})
        sharing = work.sharing.get(device.key, {})
        for name, cap in device.capacity.items():
            amount = capacity.consumed(cap, alternative.capacity.get(name))
            if capacity.violates(cap, amount):
                return None
            total = amount.value + shared.get(name, Fraction(0)) + sharing.get(name, Fraction(0))
            if total > cap.value.value:
                return None
            amounts[name] = amount
        return amounts

    # -- constraints -------------------------------------------------------------------------

    def _constrain(
        self, work: SearchPass, claim_index: int, claim: Claim, alternative: Alternative, device: Device
    ) -> bool:
        added: list[tuple[str, tuple[int, int] | tuple[int, int, str]]] = []
        for index, constraint in enumerate(claim.constraints):
            if not constraint.applies(alternative):
                continue
            if not self._constraint_adds(work, claim_index, index, constraint, alternative, device, added):
                self._unconstrain_entries(work, added)
                return False
        return True

    def _constraint_adds(
        self,
        work: SearchPass,
        claim_index: int,
        index: int,
        constraint: Constraint,
        alternative: Alternative,
        device: Device,
        added: list[tuple[str, Any]],
    ) -> bool:
        if constraint.match_attribute:
            value = attribute(device, constraint.match_attribute)
            if value is None:
                return False
            key = (claim_index, index)
            current = work.matched.get(key)
            if current is not None and current != value:
                return False
            work.matched[key] = value
            work.matched_count[key] = work.matched_count.get(key, 0) + 1
            added.append(("match", key))
            return True
        if constraint.distinct_attribute:
            value = attribute(device, constraint.distinct_attribute)
            if value is None:
                return False
            slots = {k: v for k, v in work.distinct.items() if k[:2] == (claim_index, index)}
            # 1.34 compares value pointers, which never match across devices (k8s-dra-facts 4.4).
            if self.semantics.version != "1.34" and value in slots.values():
                return False
            slot = (claim_index, index, alternative.request)
            added.append(("distinct", (slot, work.distinct.get(slot))))
            work.distinct[slot] = value
            return True
        return True

    def _unconstrain_entries(self, work: SearchPass, added: list[tuple[str, Any]]) -> None:
        for kind, entry in reversed(added):
            if kind == "match":
                work.matched_count[entry] -= 1
                if work.matched_count[entry] == 0:
                    del work.matched[entry]
            else:
                slot, previous = entry
                if previous is None:
                    work.distinct.pop(slot, None)
                else:
                    work.distinct[slot] = previous

    # -- one device --------------------------------------------------------------------------

    def _in_use(
        self,
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        alternative: Alternative,
        device: Device,
    ) -> bool:
        if alternative.admin_access:
            return any(p.device is device for p in work.placed[claim_index])
        if device.key in state.in_use:
            return True
        if device.allow_multiple and self.semantics.consumable:
            return False
        return device.key in work.allocating

    def _candidate(
        self,
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        alternative: Alternative,
        pool: Pool,
        device: Device,
    ) -> bool:
        """The pre-checks of the candidate loop: in use, binding conditions, selectors, capacity."""
        if device.binding_conditions:
            return False
        if self._in_use(work, state, claim_index, alternative, device):
            return False
        if selectors_match(self.matcher, alternative, device) is not None:
            return False
        # 1.35 checks capacity before allocateDevice, so a misfit never charges counters there.
        early_capacity = self.semantics.consumable and self.semantics.version != "1.34"
        return not (early_capacity and self._capacity(work, state, alternative, device) is None)

    def _try_device(
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
        charged = False
        multi = device.allow_multiple and self.semantics.consumable
        if device.consumes:
            if not self.semantics.partitionable:
                return None
            # Counters are charged for a shared device's first share only: later shares of this
            # pass skip the check, and shares of earlier passes were charged (strict) or not at all
            # (the scheduler, quirk b) when the availability was computed.
            already_shared = multi and (device.key in state.shares or device.key in work.sharing)
            if not already_shared:
                if not self._charge(work, pool, device):
                    return None
                charged = True

        def reject() -> None:
            # The scheduler keeps the counters of a device rejected after the counter check.
            if charged and self.semantics.strict:
                self._release(work, pool, device)

        if self.semantics.taints and untolerated_taint(device, alternative.tolerations, self.semantics):
            reject()
            return None
        if not self._constrain(work, claim_index, claim, alternative, device):
            reject()
            return None
        consumed: dict[str, Quantity] | None = None
        if self.semantics.consumable:
            consumed = self._capacity(work, state, alternative, device)
            if consumed is None:
                self._unconstrain(work, claim_index, claim, alternative, device)
                reject()
                return None
        placed = Placed(alternative, device, charged=charged)
        if multi:
            placed.share_id = self.new_share_id()
            placed.consumed = consumed or {}
            totals = work.sharing.setdefault(device.key, {})
            for name, amount in placed.consumed.items():
                totals[name] = totals.get(name, Fraction(0)) + amount.value
        else:
            work.allocating.add(device.key)
        work.placed[claim_index].append(placed)
        return placed

    def _unconstrain(
        self, work: SearchPass, claim_index: int, claim: Claim, alternative: Alternative, device: Device
    ) -> None:
        for index, constraint in enumerate(claim.constraints):
            if not constraint.applies(alternative):
                continue
            if constraint.match_attribute:
                key = (claim_index, index)
                if key in work.matched_count:
                    work.matched_count[key] -= 1
                    if work.matched_count[key] == 0:
                        del work.matched[key]
            elif constraint.distinct_attribute:
                work.distinct.pop((claim_index, index, alternative.request), None)

    def _undo(self, work: SearchPass, claim_index: int, claim: Claim, pool: Pool, placed: Placed) -> None:
        work.placed[claim_index].pop()
        device = placed.device
        self._unconstrain(work, claim_index, claim, placed.alternative, device)
        if placed.share_id is not None:
            totals = work.sharing[device.key]
            for name, amount in (placed.consumed or {}).items():
                totals[name] -= amount.value
            if not any(totals.values()) and all(p.device is not device for c in work.placed for p in c):
                del work.sharing[device.key]
            # The scheduler does not give back a shared device's counters on rollback.
            if placed.charged and self.semantics.strict:
                self._release(work, pool, device)
            return
        work.allocating.discard(device.key)
        if placed.charged:
            self._release(work, pool, device)

    # -- the search --------------------------------------------------------------------------

    def _pools(self, work: SearchPass) -> Iterator[Pool]:
        for pool in work.gathered.pools:
            if pool.invalid:  # 1.34: an invalid pool met while searching aborts the attempt
                raise AllocationError(f"pool {pool.driver}/{pool.name} is invalid: {pool.invalid}")
            if pool.incomplete and self.semantics.version != "1.34":
                continue  # 1.35 never allocates from an incomplete pool
            yield pool

    def _count_all(
        self, claims: Sequence[Claim], work: SearchPass, state: AllocatedState
    ) -> dict[int, list[tuple[Pool, Device]]]:
        """The devices of every "All" alternative, fixed before the search as the scheduler does."""
        found: dict[int, list[tuple[Pool, Device]]] = {}
        for claim in claims:
            for request in claim.requests:
                for alternative in request.alternatives:
                    if not alternative.all_devices:
                        continue
                    if work.gathered.invalid or any(p.incomplete for p in work.gathered.pools):
                        raise AllocationError(
                            f"claim {claim.ref} request {alternative.name}: allocationMode All needs "
                            "complete, valid pools"
                        )
                    devices = []
                    for pool in self._pools(work):
                        for device in pool.candidates:
                            if device.binding_conditions:
                                continue
                            if selectors_match(self.matcher, alternative, device) is not None:
                                continue
                            if (
                                self.semantics.consumable
                                and self._capacity(work, state, alternative, device) is None
                            ):
                                continue
                            devices.append((pool, device))
                    found[id(alternative)] = devices
        return found

    def _place(
        self,
        claims: Sequence[Claim],
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        request_index: int,
    ) -> bool:
        if claim_index == len(claims):
            return True
        claim = claims[claim_index]
        if request_index == len(claim.requests):
            return self._place(claims, work, state, claim_index + 1, 0)
        request = claim.requests[request_index]
        for alternative in request.alternatives:
            if alternative.all_devices:
                devices = work.all_devices[id(alternative)]
                if not devices:
                    continue  # "All" with nothing to take has no solution
                needed = len(devices)
            else:
                needed = alternative.count
            if len(work.placed[claim_index]) + needed > MAX_RESULTS:
                continue
            if self._fill(claims, work, state, claim_index, request_index, alternative, needed, 0):
                return True
        return False

    def _fill(
        self,
        claims: Sequence[Claim],
        work: SearchPass,
        state: AllocatedState,
        claim_index: int,
        request_index: int,
        alternative: Alternative,
        needed: int,
        done: int,
    ) -> bool:
        if done == needed:
            return self._place(claims, work, state, claim_index, request_index + 1)
        claim = claims[claim_index]
        if alternative.all_devices:
            pool, device = work.all_devices[id(alternative)][done]
            if self._in_use(work, state, claim_index, alternative, device):
                return False
            placed = self._try_device(work, state, claim_index, claim, alternative, pool, device)
            if placed is None:
                return False
            if self._fill(claims, work, state, claim_index, request_index, alternative, needed, done + 1):
                return True
            self._undo(work, claim_index, claim, pool, placed)
            return False
        for pool in self._pools(work):
            for device in pool.candidates:
                if not self._candidate(work, state, claim_index, alternative, pool, device):
                    continue
                placed = self._try_device(work, state, claim_index, claim, alternative, pool, device)
                if placed is None:
                    continue
                if self._fill(claims, work, state, claim_index, request_index, alternative, needed, done + 1):
                    return True
                self._undo(work, claim_index, claim, pool, placed)
        return False
