# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The backtracking search of the scheduler's structured allocator (KUBERNETES-FACTS.md F4.3, F4.4).

Claims are placed together on one node: claim by claim, request by request, device by device in
pool, slice and device order; a subrequest of ``firstAvailable`` is tried with the whole rest of
the search before the next one. What happens to one device (the rules in the scheduler's order,
and its effects on the pass) is ``placement``; the state of the call is ``search_pass``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator import rules
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure, SelectorMatcher
from deckhouse_gpu.k8s_semantics.allocator.counters import availability
from deckhouse_gpu.k8s_semantics.allocator.gather import Pool, gather
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.placement import Placer
from deckhouse_gpu.k8s_semantics.allocator.result import allocation_result
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import MAX_RESULTS, Alternative, Claim, ClaimError
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState


class AllocationError(Exception):
    """Fatal for the attempt on this node, as the scheduler's Allocate errors are."""


@dataclass
class Outcome:
    node: str
    allocations: list[dict[str, Any]] | None  # one AllocationResult per claim, in order
    error: str | None = None


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
        self.placer = Placer(semantics, matcher, new_share_id)

    def allocate(self, claims: Sequence[Claim], node: Node, state: AllocatedState) -> Outcome:
        """All claims on ``node`` or none. ``allocations`` is None when they do not fit;
        ``error`` is set for what the scheduler treats as an error, not as "does not fit"."""
        try:
            work = self.start(claims, node, state)
            work.all_devices = self._count_all(claims, work, state)
            found = self._place(claims, work, state, 0, 0)
        except (AllocationError, ClaimError) as error:
            return Outcome(node.name, None, str(error))
        except SelectorFailure as error:
            return Outcome(node.name, None, f"CEL selector failed: {error}")
        if not found:
            if work.gathered.invalid:
                return Outcome(
                    node.name,
                    None,
                    "invalid resource pools were encountered: " + "; ".join(work.gathered.invalid),
                )
            return Outcome(node.name, None)
        results = [
            allocation_result(claim, placed, node.name, self.semantics)
            for claim, placed in zip(claims, work.placed, strict=True)
        ]
        return Outcome(node.name, results)

    def start(self, claims: Sequence[Claim], node: Node, state: AllocatedState) -> SearchPass:
        """A fresh pass on the node: its pools and what their counters have left."""
        gathered = gather(self.inventory, node, self.semantics)
        work = SearchPass(node, gathered, availability(gathered, state, self.semantics))
        work.placed = [[] for _ in claims]
        return work

    def allocate_next(self, claims: Sequence[Claim], work: SearchPass, state: AllocatedState) -> bool:
        """Places the last of ``claims`` in a pass that holds the claims before it, as placed by
        earlier calls: claims allocated one after another on the pass's node, each one kept
        (kubectl gpu capacity, DESIGN.md D12). With strict semantics the pass holds what the same
        claims committed one by one would; the scheduler's accounting quirks (F4.4) differ between
        one pass and several. Only ExactCount requests: "All" is fixed once per pass. Raises what
        ``allocate`` reports as an error (AllocationError, ClaimError, SelectorFailure)."""
        if any(a.all_devices for r in claims[-1].requests for a in r.alternatives):
            raise ClaimError(f"claim {claims[-1].ref}: allocationMode All cannot be placed one by one")
        work.placed.append([])
        return self._place(claims, work, state, len(claims) - 1, 0)

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
        """The devices of every "All" alternative, fixed before the search as the scheduler does.

        Where the scheduler slips (``Semantics.all_subrequest_slip``), it judges the "All"
        subrequest at index i > 0 under the selection cache slot of subrequest i - 1: that slot's
        first filler decides which devices both see, here and in the search after."""
        found: dict[int, list[tuple[Pool, Device]]] = {}
        slip = self.semantics.all_subrequest_slip
        for claim in claims:
            for request in claim.requests:
                slots: dict[int, Alternative] = {}
                for index, alternative in enumerate(request.alternatives):
                    if not alternative.all_devices:
                        continue
                    judge = slots.setdefault(max(index - 1, 0) if slip else index, alternative)
                    if judge is not alternative:
                        work.selection[id(alternative)] = judge
                    if work.gathered.invalid or any(p.incomplete for p in work.gathered.pools):
                        raise AllocationError(
                            f"claim {claim.ref} request {alternative.name}: allocationMode All needs "
                            "complete, valid pools"
                        )
                    found[id(alternative)] = [
                        (pool, device)
                        for pool in self._pools(work)
                        for device in pool.candidates
                        if rules.binding_conditions(device) is None
                        and rules.selectors(self.matcher, judge, device) is None
                        and rules.capacity_fits(work, state, alternative, device, self.semantics) is None
                    ]
                for index, alternative in enumerate(request.alternatives):
                    judge = slots.get(index, alternative)
                    if not alternative.all_devices and judge is not alternative:
                        work.selection[id(alternative)] = judge
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

    def _going_on(
        self, alternatives: Sequence[Alternative], alternative: Alternative, work: SearchPass
    ) -> Alternative:
        """The alternative whose devices come after one of an "All" one: itself, but where the
        scheduler slips (``Semantics.all_subrequest_slip``) the request's first subrequest, from its
        second device on (the scheduler's next step forgets which subrequest it was in)."""
        if self.semantics.all_subrequest_slip and alternatives[0] is not alternative:
            return alternatives[0]
        return alternative

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
        placer = self.placer
        if alternative.all_devices:
            pool, device = work.all_devices[id(alternative)][done]
            if rules.in_use(work, state, claim_index, alternative, device, self.semantics) is not None:
                return False
            placed = placer.place(work, state, claim_index, claim, alternative, pool, device)
            if placed is None:
                return False
            going_on = self._going_on(claim.requests[request_index].alternatives, alternative, work)
            if going_on is not alternative:
                needed = len(work.all_devices[id(going_on)]) if going_on.all_devices else going_on.count
            if self._fill(claims, work, state, claim_index, request_index, going_on, needed, done + 1):
                return True
            placer.undo(work, claim_index, claim, pool, placed)
            return False
        for pool in self._pools(work):
            for device in pool.candidates:
                if placer.candidate(work, state, claim_index, alternative, device) is not None:
                    continue
                placed = placer.place(work, state, claim_index, claim, alternative, pool, device)
                if placed is None:
                    continue
                if self._fill(claims, work, state, claim_index, request_index, alternative, needed, done + 1):
                    return True
                placer.undo(work, claim_index, claim, pool, placed)
        return False
