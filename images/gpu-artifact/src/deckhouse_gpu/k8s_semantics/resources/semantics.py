# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which scheduler the allocator mirrors: Kubernetes version, feature gates and strictness."""

from __future__ import annotations

from dataclasses import dataclass

from deckhouse_gpu.k8s_semantics.versions import KNOWN_VERSIONS, NEWEST_MINOR, OLDEST_MINOR

VERSIONS = KNOWN_VERSIONS


def version_for(minor: int) -> str:
    """The semantics of an API server's minor version: 1.34 to 1.37; an older one as 1.34 (it has
    no DRA v1 to allocate from anyway), a newer one as 1.37 (KUBERNETES-FACTS.md F10)."""
    return f"1.{min(max(minor, OLDEST_MINOR), NEWEST_MINOR)}"


@dataclass(frozen=True)
class Semantics:
    """``version`` switches the 1.34/1.35 differences; the flags mirror the scheduler's gates.

    1.36 and 1.37 allocate as 1.35 does (KUBERNETES-FACTS.md F10): every check is "1.34 or not".

    ``strict`` is for the audit: it corrects the scheduler's accounting quirks (KUBERNETES-FACTS.md F4.4):
    counters of a device rejected after the counter check are given back, and the counters of a
    shared device that already has shares stay charged in later passes (the scheduler charges
    them only in the pass of the first share). Either way one device's counters count once.
    """

    version: str = "1.35"
    partitionable: bool = True  # DRAPartitionableDevices
    consumable: bool = True  # DRAConsumableCapacity
    taints: bool = True  # DRADeviceTaints
    admin_access: bool = True  # DRAAdminAccess (beta, on)
    prioritized_list: bool = True  # DRAPrioritizedList (beta, on)
    strict: bool = False

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f"Kubernetes version {self.version!r}: one of {', '.join(VERSIONS)}")

    @property
    def slices_by_name(self) -> bool:
        """A pool's slices are searched in name order (1.36, kubernetes/kubernetes #136641); 1.34
        and 1.35 take them in the informer's order, which is none in particular, and so ours is
        the order given."""
        return self.version not in ("1.34", "1.35")

    @property
    def result_tolerations(self) -> bool:
        """A result carries its request's tolerations; the 1.34 scheduler writes none (seen on
        1.34.9 by tests/real/test_allocator_vs_scheduler.py)."""
        return self.version != "1.34"

    @property
    def all_subrequest_slip(self) -> bool:
        """1.34 and 1.35 mix up the subrequests of a ``firstAvailable`` request whose "All"
        subrequest is not the first (KUBERNETES-FACTS.md F4.3); 1.36 does not (kubernetes/kubernetes
        #137347, and tests/real/test_allocator_vs_scheduler.py on 1.36.2)."""
        return self.version in ("1.34", "1.35")

    @property
    def pool_counters(self) -> bool:
        """Counters are shared per pool (1.35) instead of per slice (1.34)."""
        return self.version != "1.34"
