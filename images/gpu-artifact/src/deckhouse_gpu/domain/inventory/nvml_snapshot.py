# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What NVML reports about the driver and one card, as plain data: the NVML port returns it, the
inventory turns it into PhysicalGPU capabilities and offers."""

from __future__ import annotations

from dataclasses import dataclass, field


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
