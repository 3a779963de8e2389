# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How many more claims of one device of a class fit on a node now (DESIGN.md D12).

The allocator answers, never a count of devices: claims asking for one device of the class are
placed on the node one after another (``Allocator.allocate_next``), each kept, until one does not
fit. Give it strict semantics (KUBERNETES-FACTS.md F4.4): then what a pass keeps is what committed claims
would hold, and the count is what the hardware has room for, not what the scheduler's accounting
quirks would let through.

Three shortcuts keep a cluster of thousands of cards fast without changing any answer:

- a node's pools are gathered, and its counters' availability computed, once for every class;
  each class sees only its candidates, the devices whose selectors are true or fail
  (``SelectorGroups``): the allocator skips the others for this class anyway;
- placing a claim only takes away, so a device that did not fit one claim fits none after it:
  the next search starts at the device the last claim got;
- nodes that look the same to the search (the same candidates in the same order, with the same
  consumption, capacity, taints and use, and the same counters left) get the same count, which
  is computed once (``capacity_looks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from deckhouse_gpu.domain.allocation.capacity_looks import NodeLooks
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.allocator.counters import availability
from deckhouse_gpu.k8s_semantics.allocator.gather import Gathered, Pool, gather
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import AllocationError, Allocator
from deckhouse_gpu.k8s_semantics.allocator.search_pass import CounterKey, SearchPass
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import FAILS, SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.claims import Claim, ClaimError, DeviceClass, parse_claim
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

ENOUGH = 10_000  # claims per node and class: beyond any node's devices, a guard against no end


@dataclass(frozen=True)
class Probe:
    """A claim of one device of a class, and its selectors in the allocator's order."""

    device_class: str
    claim: Claim
    expressions: tuple[str, ...]


@dataclass(frozen=True)
class Count:
    device_class: str
    node: str
    fits: int
    error: str | None = None  # the allocator's error that ended the counting, if one did
    unlimited: bool = False  # a shared device takes claims that consume nothing of it: no end


def probe(device_class: DeviceClass, allocator: Allocator) -> Probe:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class.name}}
    raw = {
        "metadata": {"namespace": "", "name": f"one-{device_class.name}"},
        "spec": {"devices": {"requests": [request]}},
    }
    claim = parse_claim(raw, {device_class.name: device_class}, allocator.semantics)
    return Probe(device_class.name, claim, device_class.selectors)


class CapacityCounter:
    def __init__(self, allocator: Allocator, state: AllocatedState, groups: SelectorGroups) -> None:
        if not allocator.semantics.strict:
            raise ValueError("capacity is counted with strict semantics: see the module docstring")
        self.allocator = allocator
        self.state = state
        self.groups = groups
        self.looks = NodeLooks(allocator.semantics, state, groups)
        self._known: dict[int, dict[str, tuple[int, str | None, bool]]] = {}  # per node's looks, per class

    def count(self, probes: Sequence[Probe], node: Node) -> list[Count]:
        """One count per probe, in order."""
        semantics = self.allocator.semantics
        gathered = gather(self.allocator.inventory, node, semantics)
        available = availability(gathered, self.state, semantics)
        known = self._known.setdefault(self.looks.number(gathered, available), {})
        grouped: list[dict[int, list[int]]] = []  # filled for the first class this node counts
        counts = []
        for item in probes:
            # Selectors that may read anything are judged device by device: the fingerprint,
            # which knows devices by their selector group, does not tell their results.
            memo = known if self.groups.per_group(item.expressions) else {}
            known_count = memo.get(item.device_class)
            if known_count is not None:
                counts.append(Count(item.device_class, node.name, *known_count))
                continue
            failing: set[int] = set()
            if not grouped:
                grouped += [self._by_group(pool) for pool in gathered.pools]
            pools = [
                replace(pool, candidates=self._candidates(item, pool, by_group, failing))
                for pool, by_group in zip(gathered.pools, grouped, strict=True)
            ]
            for pool in pools:
                for device in pool.candidates:
                    if id(device) not in failing:
                        for expression in item.expressions:
                            device.cache[expression] = True  # the allocator looks there first
            found = self._fill(item, node, Gathered(pools, gathered.invalid), available)
            if found.error is None:  # an error names devices of this node
                memo[item.device_class] = (found.fits, found.error, found.unlimited)
            counts.append(found)
        return counts

    def _by_group(self, pool: Pool) -> dict[int, list[int]]:
        """The positions of the pool's candidates per selector group."""
        found: dict[int, list[int]] = {}
        for index, device in enumerate(pool.candidates):
            found.setdefault(self.groups.group(device), []).append(index)
        return found

    def _candidates(
        self, item: Probe, pool: Pool, by_group: dict[int, list[int]], failing: set[int]
    ) -> list[Device]:
        """The pool's candidates whose selectors are true or fail, in the pool's order; the ids of
        those that fail go into ``failing``."""
        devices = pool.candidates
        if not self.groups.per_group(item.expressions):
            kept = []
            for device in devices:
                verdict = self.groups.all_of(item.expressions, device)
                if verdict is not False:
                    kept.append(device)
                    if verdict is FAILS:
                        failing.add(id(device))
            return kept
        chosen: list[int] = []
        for positions in by_group.values():
            verdict = self.groups.all_of(item.expressions, devices[positions[0]])
            if verdict is FAILS:
                failing.update(id(devices[i]) for i in positions)
            if verdict is not False:
                chosen += positions
        chosen.sort()
        return [devices[i] for i in chosen]

    def _fill(
        self, item: Probe, node: Node, gathered: Gathered, available: dict[CounterKey, dict[str, Fraction]]
    ) -> Count:
        work = SearchPass(node, gathered, available)
        claims: list[Claim] = []
        fits, error = 0, None
        whole = [pool.candidates for pool in gathered.pools]
        while fits < ENOUGH:
            claims.append(item.claim)
            try:
                placed = self.allocator.allocate_next(claims, work, self.state)
            except (AllocationError, ClaimError) as failure:
                error = str(failure)
                break
            except SelectorFailure as failure:
                error = f"CEL selector failed: {failure}"
                break
            if not placed:
                if gathered.invalid:
                    error = "invalid resource pools were encountered: " + "; ".join(gathered.invalid)
                break
            fits += 1
            last = work.placed[-1][-1]
            if last.share_id is not None and not any(q.value for q in (last.consumed or {}).values()):
                return Count(item.device_class, node.name, fits, unlimited=True)
            _start_at(gathered.pools, whole, last.device)
        else:
            error = f"stopped counting at {ENOUGH} claims"
        return Count(item.device_class, node.name, fits, error)


def _start_at(pools: list[Pool], whole: list[list[Device]], device: Device) -> None:
    """Drops the candidates before ``device``: none of them fits a later claim either."""
    for index, candidates in enumerate(whole):
        if pools[index].candidates and device in pools[index].candidates:
            position = next(i for i, d in enumerate(candidates) if d is device)
            pools[index].candidates = candidates[position:]
            return
        pools[index].candidates = []
