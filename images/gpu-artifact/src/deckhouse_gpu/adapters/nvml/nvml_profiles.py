# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MIG GPU-instance profiles of one card through NVML, each with the placements it may take."""

from __future__ import annotations

import ctypes
import math
from typing import Any, Protocol

from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.domain.inventory.nvml_snapshot import GpuInstanceProfile, Placement
from deckhouse_gpu.ports.nvml import NVMLQueryFailed

_MIB = 1024 * 1024
_PROFILE_VERSIONS = (3, 2, 1)  # nvmlGpuInstanceProfileInfo_v3, _v2 and the unversioned v1
_MIN_PROFILE_INDEXES = 32


class CardQueries(Protocol):
    """What the profile reader needs of the card reader: the bindings, the handle and its queries."""

    nv: Any
    handle: Any
    address: str

    def query(self, query: str, *args: Any, optional: bool = False) -> Any: ...

    def raise_if_library_wide(self, nv: Any, error: Any, query: str) -> None: ...


class MigProfileReader:
    """Probes a card's profile indexes, settling on the newest struct version the driver answers."""

    def __init__(self, card: CardQueries) -> None:
        self.card = card
        self.profile_versions = list(_PROFILE_VERSIONS)
        self.profile_version_confirmed = False

    def mig_profiles(self, total_bytes: int) -> tuple[GpuInstanceProfile, ...]:
        # Probe past the bindings' PROFILE_COUNT: a newer driver may know profiles they do not.
        indexes = range(
            max(int(getattr(self.card.nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0)), _MIN_PROFILE_INDEXES)
        )
        profiles: dict[int, GpuInstanceProfile] = {}
        for index in indexes:
            info = self.profile_info(index)
            if info is not None and int(info.id) not in profiles:
                profiles[int(info.id)] = _profile(info, self.placements(int(info.id)), total_bytes)
        return tuple(profiles.values())

    def profile_info(self, index: int) -> Any | None:
        """The profile at ``index``, newest struct version first; None when the card has none there."""
        nv = self.card.nv
        for version in list(self.profile_versions):
            try:
                info = nv.nvmlDeviceGetGpuInstanceProfileInfo(self.card.handle, index, version)
            except nv.NVMLError as error:
                if error.value in (nv.NVML_ERROR_FUNCTION_NOT_FOUND, nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH):
                    self.profile_versions.remove(version)  # the bindings or the driver lack this version
                    continue
                if error.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_INVALID_ARGUMENT):
                    # Until one version has answered, "invalid" may mean the struct version, not
                    # the index (drivers older than ARGUMENT_VERSION_MISMATCH): try the older ones.
                    if self.profile_version_confirmed:
                        return None
                    continue
                self.card.raise_if_library_wide(nv, error, "nvmlDeviceGetGpuInstanceProfileInfo")
                query = f"nvmlDeviceGetGpuInstanceProfileInfo(profile index {index}, v{version})"
                raise NVMLQueryFailed(self.card.address, query, describe(error)) from error
            del self.profile_versions[: self.profile_versions.index(version)]
            self.profile_version_confirmed = True
            return info
        return None

    def placements(self, profile_id: int) -> tuple[Placement, ...]:
        # Two calls, as go-nvml does: a NULL array asks for the count, then the array is filled.
        query = "nvmlDeviceGetGpuInstancePossiblePlacements"
        count = ctypes.c_uint(0)
        card = self.card
        if card.query(query, profile_id, None, ctypes.byref(count), optional=True) is None or not count.value:
            return ()
        array = (card.nv.c_nvmlGpuInstancePlacement_t * count.value)()
        card.query(query, profile_id, array, ctypes.byref(count))
        return tuple(Placement(int(entry.start), int(entry.size)) for entry in array[: count.value])


def _profile(info: Any, placements: tuple[Placement, ...], total_bytes: int) -> GpuInstanceProfile:
    raw = getattr(info, "name", b"")  # the v1 struct has no name
    name = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)).strip()
    if name == "MIG" or name.startswith("MIG "):
        name = name[3:].strip()  # NVML says "MIG 1g.6gb"; nvidia-smi and users say "1g.6gb"
    memory_mib = int(info.memorySizeMB)  # NVML's "MB" here are MiB (A30 1g.6gb: 5952)
    return GpuInstanceProfile(
        profile_id=int(info.id),
        name=name.removeprefix("MIG ").strip()
        or f"{int(info.sliceCount)}g.{mig_memory_gb(memory_mib, total_bytes)}gb",
        memory_mib=memory_mib,
        slice_count=int(info.sliceCount),
        instance_count=int(info.instanceCount),
        multiprocessors=int(info.multiprocessorCount),
        copy_engines=int(info.copyEngineCount),
        decoders=int(info.decoderCount),
        encoders=int(info.encoderCount),
        jpeg_engines=int(info.jpegCount),
        ofa_engines=int(info.ofaCount),
        placements=placements,
    )


def mig_memory_gb(profile_mib: int, total_bytes: int) -> int:
    """The GB in a MIG profile name, computed as go-nvlib names profiles (1g.5gb on a 40 GB A100):
    the card's share rounded up to eighths, times the card's size rounded up to whole GiB."""
    if total_bytes <= 0:
        return math.floor(profile_mib / 1024 + 0.5)
    share = math.ceil(profile_mib * _MIB / total_bytes * 8) / 8
    return math.floor(share * -(-total_bytes // (1024 * _MIB)) + 0.5)
