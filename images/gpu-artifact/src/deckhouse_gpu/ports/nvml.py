"""NVML as gpu-handler sees it: plain snapshots of what the driver reports, and typed errors.

Two adapters implement ``NVML``: the real one on nvidia-ml-py (``pynvml``) and a simulated one
driven by per-model data files. Errors say what failed, so the handler can set
``HardwareHealthy`` reasons (``NVMLUnavailable`` for the library or driver as a whole,
``NVMLQueryFailed`` for one card) without knowing NVML's return codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class NVMLError(Exception):
    """Base of every NVML failure."""


class NVMLUnavailable(NVMLError):
    """The library cannot be loaded or initialised, or the driver is not loaded: no card works."""


class NVMLDeviceNotFound(NVMLError):
    """NVML does not know a device at this PCI address (unbound, lost, or not NVIDIA's)."""


class NVMLQueryFailed(NVMLError):
    """A query for one card failed (the card is lost, fell off the bus, needs a reset, ...)."""

    def __init__(self, pci_address: str, query: str, detail: str) -> None:
        super().__init__(f"{pci_address}: {query} failed: {detail}")
        self.pci_address = pci_address
        self.query = query
        self.detail = detail


@dataclass(frozen=True)
class Placement:
    start: int  # first memory slice
    size: int  # memory slices covered


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One MIG GPU instance profile as NVML reports it (nvmlGpuInstanceProfileInfo_v3)."""

    profile_id: int  # the unique id (``nvidia-smi mig -lgip`` ID column), not the query index
    name: str  # "1g.6gb", "1g.6gb+me"; adapters synthesise "<n>g.<GB>gb" when the driver gives none
    memory_mib: int
    slice_count: int  # compute slices
    instance_count: int  # how many fit on an empty card
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    placements: tuple[Placement, ...] = ()


@dataclass(frozen=True)
class DriverInfo:
    driver_version: str
    cuda_version: str | None  # "13.0"; None when the driver does not say


@dataclass(frozen=True)
class DeviceSnapshot:
    """Everything gpu-handler reads of one card in one pass. None: not supported or not reported."""

    pci_address: str
    name: str
    uuid: str
    memory_total_mib: int
    compute_capability: tuple[int, int]
    architecture: str | None = None  # "Ampere", "Hopper", ...
    board_part_number: str | None = None
    power_limit_min_w: int | None = None
    power_limit_max_w: int | None = None
    power_limit_current_w: int | None = None
    power_limit_enforced_w: int | None = None
    mig_supported: bool = False
    mig_current_enabled: bool | None = None  # None when MIG is not supported or unreadable
    mig_pending_enabled: bool | None = None
    mig_profiles: tuple[GpuInstanceProfile, ...] = field(default=())


class NVML(Protocol):
    def driver(self) -> DriverInfo:
        """Initialises on first use; raises NVMLUnavailable when NVML cannot work at all."""
        ...

    def device_addresses(self) -> list[str]:
        """PCI addresses (``0000:17:00.0``, lowercase) of every device NVML sees."""
        ...

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        """One card's snapshot; NVMLDeviceNotFound or NVMLQueryFailed for this card only."""
        ...
