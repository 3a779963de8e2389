"""Which scheduler the allocator mirrors: Kubernetes version, feature gates and strictness."""

from __future__ import annotations

from dataclasses import dataclass

VERSIONS = ("1.34", "1.35")


@dataclass(frozen=True)
class Semantics:
    """``version`` switches the 1.34/1.35 differences; the flags mirror the scheduler's gates.

    ``strict`` is for the audit: it charges what the scheduler leaves uncharged (counters of a
    device rejected later in the same pass are rolled back, and a shared device's counters are
    charged for every later allocation, not only for its first share).
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
