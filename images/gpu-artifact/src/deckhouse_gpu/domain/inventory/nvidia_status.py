# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Turns an NVML snapshot into the handler's part of PhysicalGPU.status (DESIGN.md S4.2.1/S4.2.2.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.compute_types import (
    architecture_from_capability,
    compute_types,
)
from deckhouse_gpu.domain.inventory.nvml_snapshot import (
    DeviceSnapshot,
    DriverInfo,
    GpuInstanceProfile,
)
from deckhouse_gpu.domain.inventory.physicalgpu import (
    Capabilities,
    MigCapabilities,
    MigMode,
    MigPlacement,
    MigProfile,
    NvidiaCapabilities,
    NvidiaMigState,
    NvidiaState,
    Vendor,
)
from deckhouse_gpu.k8s_semantics.apimachinery.codec import encode


@dataclass(frozen=True)
class NvidiaView:
    """``capabilities`` and ``currentState.nvidia`` in API JSON form."""

    capabilities: dict[str, Any]
    current_state: dict[str, Any]


def memory_slice_count(profiles: tuple[GpuInstanceProfile, ...]) -> int:
    """Memory slices of the card: the end of the furthest placement.

    Compute slices and memory slices differ (an A100's 7g profile covers 8 memory slices), and
    the scheduler's counters are per memory slice, so this is what ``totalSlices`` reports.
    """
    ends = [p.start + p.size for profile in profiles for p in profile.placements]
    if ends:
        return max(ends)
    return max((p.slice_count * p.instance_count for p in profiles), default=0)


def _profile(profile: GpuInstanceProfile) -> MigProfile:
    return MigProfile(
        profile_id=profile.profile_id,
        name=profile.name,
        memory_mib=profile.memory_mib,
        slice_count=profile.slice_count,
        max_instances=profile.instance_count,
        multiprocessors=profile.multiprocessors,
        copy_engines=profile.copy_engines,
        decoders=profile.decoders,
        encoders=profile.encoders,
        jpeg_engines=profile.jpeg_engines,
        ofa_engines=profile.ofa_engines,
        placements=[MigPlacement(p.start, p.size) for p in profile.placements],
    )


def capabilities(snapshot: DeviceSnapshot) -> Capabilities:
    major, minor = snapshot.compute_capability
    mig = None
    if snapshot.mig_supported and snapshot.mig_profiles:
        profiles = sorted(snapshot.mig_profiles, key=lambda p: (p.slice_count, p.memory_mib, p.profile_id))
        mig = MigCapabilities(memory_slice_count(snapshot.mig_profiles), [_profile(p) for p in profiles])
    return Capabilities(
        product_name=snapshot.name,
        memory_mib=snapshot.memory_total_mib,
        vendor=Vendor.NVIDIA,
        nvidia=NvidiaCapabilities(
            compute_cap=f"{major}.{minor}",
            product_architecture=snapshot.architecture or architecture_from_capability(major, minor),
            board_part_number=snapshot.board_part_number or None,
            compute_types=compute_types(major, minor),
            power_limit_min_w=snapshot.power_limit_min_w,
            power_limit_max_w=snapshot.power_limit_max_w,
            mig_supported=snapshot.mig_supported,
            mig=mig,  # absent entirely without MIG support, totalSlices included (DESIGN.md S4.2.1)
        ),
    )


def _mig_mode(enabled: bool | None) -> MigMode | None:
    if enabled is None:
        return None
    return MigMode.ENABLED if enabled else MigMode.DISABLED


def nvidia_state(snapshot: DeviceSnapshot, driver: DriverInfo) -> NvidiaState:
    mig = None
    if snapshot.mig_supported:
        current = _mig_mode(snapshot.mig_current_enabled)
        if current is not None:  # only when supported and readable (DESIGN.md S4.2.1)
            pending = _mig_mode(snapshot.mig_pending_enabled)
            mig = NvidiaMigState(current, pending if pending != current else None)
    return NvidiaState(
        gpu_uuid=snapshot.uuid,
        driver_version=driver.driver_version,
        cuda_version=driver.cuda_version,
        power_limit_current_w=snapshot.power_limit_current_w,
        power_limit_enforced_w=snapshot.power_limit_enforced_w,
        mig=mig,
    )


def nvidia_view(snapshot: DeviceSnapshot, driver: DriverInfo) -> NvidiaView:
    return NvidiaView(encode(capabilities(snapshot)), encode(nvidia_state(snapshot, driver)))
