# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which counters a MIG-capable card's set holds (DESIGN.md D2 a).

The full layout gives the set the card's memory, one counter per memory slice and one per engine
kind (multiprocessors, copy engines, decoders, encoders, JPEG, OFA), each as large as the most a
full set of one profile uses; a MIG offer consumes its profile's memory and engines and the slices
of its placement, the whole card all of them. Every counter costs the scheduler work on every
device of the pool in every cycle, so the published set keeps only the counters that change which
sets of offers fit:

- a memory slice that no offered placement covers is left out: only the whole card consumed it;
- any other counter is left out when the sets of MIG offers the remaining counters admit never
  need more of it than the card has. The remaining counters then admit exactly the sets the full
  layout admits, so dropping it changes no allocation.

That test is exact: ``_most`` finds the most of a counter any admitted set uses. Placements are
runs of memory slices and every kept slice holds one instance, so an admitted set is a walk over
the slices from the first: at each slice either no instance starts there, or one does and the walk
continues past it. The walk, with what the remaining counters have used so far, is a small
memoised search (a few hundred states for 8 slices). Counters are tried in a fixed order, engines
last, so that what stays is the memory slices and, on cards with media-engine (``+me``) profiles,
the one engine counter that keeps those to one per card. The whole card consumes every kept
counter; it still excludes every MIG offer, since each consumes at least one kept slice.
tests/domain/offers/test_counter_equivalence.py proves the result for every model of the catalog
against the full layout and the simulated driver's placement rules, over all sets of offers.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MEMORY = "memory"
SLICE = "memory-slice-"
# A run of memory slices counted as one (``grouped``): "memory-slices-4-7", as large as the run.
GROUP = "memory-slices-"
# Engine counters: (counter name, field of a MIG profile in PhysicalGPU status), in the order the
# reduction tries to drop them.
ENGINE_COUNTERS: tuple[tuple[str, str], ...] = (
    ("multiprocessors", "multiprocessors"),
    ("copy-engines", "copyEngines"),
    ("decoders", "decoders"),
    ("encoders", "encoders"),
    ("jpeg-engines", "jpegEngines"),
    ("ofa-engines", "ofaEngines"),
)


@dataclass(frozen=True)
class Placed:
    """A MIG offer as the counters see it: its memory slices and what else it consumes."""

    start: int
    size: int
    uses: tuple[tuple[str, int], ...]  # (counter, amount) of the counters besides its memory slices

    def use(self, name: str) -> int:
        return next((amount for counter, amount in self.uses if counter == name), 0)

    def slices(self) -> list[str]:
        return [f"{SLICE}{index}" for index in range(self.start, self.start + self.size)]


def full_capacity(
    memory_mib: int, total_slices: int, profiles: Iterable[Mapping[str, Any]]
) -> dict[str, int]:
    """The full layout's counters and their values (memory in MiB), from all the card's profiles."""
    profiles = list(profiles)
    counters = {MEMORY: memory_mib}
    counters.update({f"{SLICE}{index}": 1 for index in range(total_slices)})
    for counter, key in ENGINE_COUNTERS:
        # Enough for any combination NVIDIA allows: the most a full set of one profile uses.
        total = max((int(p.get(key) or 0) * int(p.get("maxInstances") or 0) for p in profiles), default=0)
        if total > 0:
            counters[counter] = total
    return counters


def profile_uses(profile: Mapping[str, Any], counters: Container[str]) -> tuple[tuple[str, int], ...]:
    """What an instance of the profile consumes besides its memory slices, of ``counters``."""
    uses = [(MEMORY, int(profile["memoryMiB"]))]
    for counter, key in ENGINE_COUNTERS:
        if int(profile.get(key) or 0) > 0:
            uses.append((counter, int(profile[key])))
    return tuple((counter, amount) for counter, amount in uses if counter in counters)


def needed(capacity: Mapping[str, int], offers: Sequence[Placed], *, dominated: bool = False) -> list[str]:
    """The counters of ``capacity`` the set must keep for ``offers`` to fit exactly as in the full
    layout, in the order of ``capacity``. ``dominated``: also leave out each memory slice that
    another kept slice dominates (``_undominated``)."""
    return list(_needed(tuple(capacity.items()), tuple(offers), dominated))


@lru_cache(maxsize=64)  # one entry per model and profile choice: every publish asks again
def _needed(
    items: tuple[tuple[str, int], ...], offers: tuple[Placed, ...], dominated: bool = False
) -> tuple[str, ...]:
    capacity = dict(items)
    covered = {name for offer in offers for name in offer.slices()}
    if dominated:
        covered = _undominated([name for name in capacity if name in covered], offers)
    kept = [name for name in capacity if not name.startswith(SLICE)]
    for name in list(kept):
        rest = [other for other in kept if other != name]
        if _most(name, rest, capacity, offers) <= capacity[name]:
            kept = rest
    return tuple(name for name in capacity if name in kept or name in covered)


def _undominated(slices: Sequence[str], offers: Sequence[Placed]) -> set[str]:
    """The memory slices left once each slice is dropped whose offers all cover another slice
    still kept (slice 7 of an A100 or H100: every placement covering it covers slice 6). Two
    offers that share a dropped slice share its witness, which stays or was dropped for a witness
    of its own (the offers of each contain the ones before), so overlaps still collide; and every
    offer keeps at least one slice, so the whole card, which consumes them all, still excludes it.
    The engine counters are judged on the placements themselves (``_most``), not on these."""
    users = {name: {i for i, offer in enumerate(offers) if name in offer.slices()} for name in slices}
    kept = list(slices)
    for name in slices:
        if any(other != name and users[name] <= users[other] for other in kept):
            kept.remove(name)
    return set(kept)


def _most(target: str, rest: Sequence[str], capacity: Mapping[str, int], offers: Sequence[Placed]) -> int:
    """The most of ``target`` that a set of offers uses whose memory slices do not overlap and that
    fits every counter of ``rest``."""
    starting: dict[int, list[Placed]] = {}
    for offer in offers:
        starting.setdefault(offer.start, []).append(offer)
    end = max((offer.start + offer.size for offer in offers), default=0)
    limits = [capacity[name] for name in rest]
    memo: dict[tuple[int, tuple[int, ...]], int] = {}

    def best(position: int, used: tuple[int, ...]) -> int:
        if position >= end:
            return 0
        key = (position, used)
        if key not in memo:
            found = best(position + 1, used)  # no instance starts at this slice
            for offer in starting.get(position, ()):
                after = tuple(u + offer.use(name) for u, name in zip(used, rest, strict=True))
                if all(a <= limit for a, limit in zip(after, limits, strict=True)):
                    found = max(found, offer.use(target) + best(position + offer.size, after))
            memo[key] = found
        return memo[key]

    return best(0, tuple(0 for _ in rest))


def grouped(slices: Sequence[str], offers: Sequence[Placed]) -> dict[str, tuple[str, ...]]:
    """The kept memory ``slices`` as counters: each run that can count as one (``_countable``)
    becomes a counter of its own, as large as the run, that an offer consumes by the slices of
    the run it covers; every other slice stays its own counter. Counter name -> its slices, in
    slice order.

    Counted as one, a run admits a set of offers exactly when the slices did: every offer covers
    none, one or all of its slices, and no two cover the same single slice, so the offers of a set
    that fits the run's sum are disjoint in it, and the other way round. Fewer counter references
    per device: the scheduler converts and checks each of them for every device of the node on
    every node it tries (issue 37). Where the rule fails (an H100 with every profile: 1g.20gb
    covers half of 3g.40gb's run) the slices stay as they are. For a multiset of devices (quirk (a)
    of KUBERNETES-FACTS.md F4.4 charges a device's counters twice) the run's sum is the sum of its
    slices, so it admits whatever the slices admit, never less."""
    kept = set(slices)
    runs: list[tuple[str, ...]] = []
    for offer in sorted(offers, key=lambda o: -o.size):
        run = tuple(name for name in offer.slices() if name in kept)
        taken = {name for other in runs for name in other}
        if len(run) > 1 and run not in runs and not taken & set(run) and _countable(run, offers):
            runs.append(run)
    result: dict[str, tuple[str, ...]] = {}
    for name in slices:
        run = next((run for run in runs if name in run), (name,))
        if len(run) == 1:
            result[name] = run
        elif name == run[0]:
            result[f"{GROUP}{run[0].removeprefix(SLICE)}-{run[-1].removeprefix(SLICE)}"] = run
    return result


def _countable(run: Sequence[str], offers: Sequence[Placed]) -> bool:
    """Whether the slices of ``run`` (contiguous) can be counted as one: every offer covers none,
    one or all of them, and each slice is the only one of the run for at most one offer."""
    indices = [int(name.removeprefix(SLICE)) for name in run]
    if indices != list(range(indices[0], indices[0] + len(indices))):
        return False
    alone: set[str] = set()
    for offer in offers:
        inside = [name for name in offer.slices() if name in run]
        if len(inside) not in (0, 1, len(run)):
            return False
        if len(inside) == 1:
            if inside[0] in alone:
                return False
            alone.add(inside[0])
    return True


def slice_runs(counters: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The memory slices each memory counter of a set stands for: a slice itself, or the run a
    ``grouped`` counter names ("memory-slices-4-7")."""
    runs: dict[str, tuple[str, ...]] = {}
    for name in counters:
        if name.startswith(SLICE):
            runs[name] = (name,)
        elif name.startswith(GROUP):
            first, _, last = name.removeprefix(GROUP).partition("-")
            runs[name] = tuple(f"{SLICE}{index}" for index in range(int(first), int(last) + 1))
    return runs


def slice_uses(counters: Iterable[str], placed: Placed) -> dict[str, int]:
    """What ``placed`` consumes of the memory counters among ``counters``."""
    covered = set(placed.slices())
    uses = {name: sum(1 for s in run if s in covered) for name, run in slice_runs(counters).items()}
    return {name: amount for name, amount in uses.items() if amount}


def quantity(name: str, value: int) -> str:
    return f"{value}Mi" if name == MEMORY else str(value)
