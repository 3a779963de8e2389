# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which scheduler the allocator mirrors: Kubernetes version, feature gates and strictness."""

from __future__ import annotations

from dataclasses import dataclass

VERSIONS = ("1.34", "1.35")


@dataclass(frozen=True)
class Semantics:
    """``version`` switches the 1.34/1.35 differences; the flags mirror the scheduler's gates.

    ``strict`` is for the audit: it corrects the scheduler's accounting quirks (DESIGN.md F4.4):
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
    def pool_counters(self) -> bool:
        """Counters are shared per pool (1.35) instead of per slice (1.34)."""
        return self.version != "1.34"
