# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The order in which a card's MIG placements are published: the scheduler's first fit (DESIGN.md D19).

The kube-scheduler gives a request the first free device that fits, in the order of the pool's
slices and of their devices, and never moves an instance afterwards. Cards come in address
order, each card's offers together, so a partly used card is always tried before a free one
behind it and a whole-card request passes over it. Within a card the order decides which
placement a small instance takes, and so which larger placements it blocks. The rule is the
same for every model; what differs per model is only the data it reads, the placements the card
itself reports (NVML's, in the PhysicalGPU's status), after dra.migProfiles and the
DeviceClasses have chosen which are offered:

- smaller profiles first (fewer memory slices, then less memory, then NVML's order), so a class
  that accepts several profiles gets the smallest that fits;
- within a profile, first the placements that strand the fewest memory slices: the region
  around a placement is the smallest larger placement offered that holds it, and the slices of
  that region which profiles no larger than this one could use but which no placement of this
  profile covers are left to smaller ones only. On an H100 or A100 a 2g instance at slice 4
  leaves slice 6 to 1g alone, while 2g at 0 and 2 tile their half: 2g goes to 2 and 0 first;
- then the placements that overlap the fewest placements offered of larger profiles, then the
  higher start: a 1g instance goes to slice 6, then 5 and 4, keeping 4g/3g at slice 0 and the
  whole 7g free longest; 3g takes slice 4 before 0, keeping 4g's only placement; with only 1g
  and 3g offered, the 1g instances fill one half of the card before the other.

NVML's own order (and the module's earlier order, by device name) is the lowest start first,
which is the slice every larger placement needs. benchmarks/mig_packing.py measures both on the
real scheduler against an optimal packer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Placement:
    """A MIG placement offered: its profile (a PhysicalGPU status entry) and its memory slices."""

    profile: dict[str, Any]
    start: int
    size: int

    def overlaps(self, other: Placement) -> bool:
        return self.start < other.start + other.size and other.start < self.start + self.size

    def holds(self, other: Placement) -> bool:
        return self.start <= other.start and other.start + other.size <= self.start + self.size

    def slices(self) -> range:
        return range(self.start, self.start + self.size)


def packing_order(placements: Sequence[Placement]) -> list[Placement]:
    """``placements`` (of one card) in the order first fit packs best."""
    profile_rank: dict[int, int] = {}  # NVML's order of the profiles
    for placement in placements:
        profile_rank.setdefault(id(placement.profile), len(profile_rank))

    def blocked(placement: Placement) -> int:
        return sum(1 for other in placements if other.size > placement.size and placement.overlaps(other))

    def stranded(placement: Placement) -> int:
        holders = [o for o in placements if o.size > placement.size and o.holds(placement)]
        if not holders:
            return 0
        region = min(holders, key=lambda o: (o.size, o.start))
        inside = [o for o in placements if o.size <= placement.size and region.holds(o)]
        usable = {s for o in inside for s in o.slices()}
        own = {s for o in inside if o.profile is placement.profile for s in o.slices()}
        return len(usable - own)

    def key(placement: Placement) -> tuple[int, int, int, int, int, int]:
        profile = placement.profile
        return (
            placement.size,
            int(profile.get("memoryMiB") or 0),
            profile_rank[id(profile)],
            stranded(placement),
            blocked(placement),
            -placement.start,
        )

    return sorted(placements, key=key)
