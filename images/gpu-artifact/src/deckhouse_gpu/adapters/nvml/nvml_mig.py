# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MigControl port on nvidia-ml-py: MIG mode and GPU/compute instances through the real driver.

It shares RealNVML's library loading, initialisation and card lookup (``device_handle``) and its
test for library-wide failures, so one process initialises NVML once. Every failure becomes a
MigError naming the card, the NVML call and NVML's text, with what to do about it.

pynvml gives its C functions no argument types, so structures go by reference (``byref``) exactly
as the C prototypes take pointers; the tests' stand-in library checks that.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

from deckhouse_gpu.adapters.nvml.nvml_card import CardReader
from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_profiles import MigProfileReader
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML
from deckhouse_gpu.domain.inventory.nvml_snapshot import GpuInstanceProfile
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigError, MigModePending
from deckhouse_gpu.ports.nvml import NVMLError as PortNVMLError

log = logging.getLogger(__name__)

NO_COMPUTE_INSTANCE = -1
"""compute_instance_id of a GPU instance listed without one (a prepare that died between the two
creates); destroy_instance(card, gi, NO_COMPUTE_INSTANCE) removes it."""

_HINTS = {
    "IN_USE": "processes or MIG instances still use it: stop the processes on the card (nvidia-smi "
    "lists them), destroy its MIG instances, then retry",
    "INSUFFICIENT_RESOURCES": "the placement overlaps an existing MIG instance or the card's engines "
    "are taken (nvidia-smi mig -lgi lists the instances)",
    "INVALID_ARGUMENT": "the profile or placement is not one this card offers (nvidia-smi mig -lgipp)",
    "NOT_SUPPORTED": "the card has no MIG, or MIG mode is not enabled on it",
    "NO_PERMISSION": "changing MIG needs root: gpu-handler must run privileged",
    "RESET_REQUIRED": "the GPU needs a reset (nvidia-smi -r), or in a VM a reboot",
    "GPU_IS_LOST": "the card fell off the bus: check the kernel log for Xid errors; the node needs a reboot",
}


# The version or the profile index is unknown to the driver, or the GPU instance cannot hold it.
_NO_COMPUTE_PROFILE = ("FUNCTION_NOT_FOUND", "ARGUMENT_VERSION_MISMATCH", "NOT_SUPPORTED", "INVALID_ARGUMENT")


def code_name(nv: Any, code: int) -> str:
    """``NVML_ERROR_IN_USE`` for 19: the constant's name, which pynvml's messages leave out."""
    names = (name for name, value in vars(nv).items() if name.startswith("NVML_ERROR_") and value == code)
    return next(names, f"NVML return code {code}")


class _Card:
    """One card's handle for one operation; calls pynvml and turns its failures into MigError."""

    def __init__(self, nvml: RealNVML, card: str) -> None:
        try:
            self.nv, self.handle, self.address = nvml.device_handle(card)
        except PortNVMLError as error:
            raise MigError(_on_card(card, str(error))) from error
        self.nvml = nvml

    def call(self, query: str, *args: Any, absent: tuple[str, ...] = ()) -> Any:
        """pynvml's ``query``; None when NVML answers one of the ``absent`` codes (names without
        the NVML_ERROR_ prefix); a MigError for any other failure."""
        nv = self.nv
        try:
            return getattr(nv, query)(*args)
        except nv.NVMLError as error:
            if error.value in {getattr(nv, f"NVML_ERROR_{name}", None) for name in absent}:
                return None
            raise self.error(query, error) from error

    def error(self, query: str, error: Any) -> MigError:
        try:
            self.nvml.raise_if_library_wide(self.nv, error, query)  # and forgets the initialisation
        except PortNVMLError as unavailable:
            return MigError(_on_card(self.address, str(unavailable)))
        name = code_name(self.nv, error.value)
        hint = _HINTS.get(name.removeprefix("NVML_ERROR_"))
        return MigError(
            f"{self.address}: {query} failed: {describe(error)} [{name}]" + (f"; {hint}" if hint else "")
        )

    def mig_mode(self) -> tuple[int, int] | None:
        mode = self.call("nvmlDeviceGetMigMode", self.handle, absent=("NOT_SUPPORTED", "FUNCTION_NOT_FOUND"))
        return None if mode is None else (int(mode[0]), int(mode[1]))

    def profiles(self) -> tuple[GpuInstanceProfile, ...]:
        reader = CardReader(self.nv, self.handle, self.address, self.nvml.raise_if_library_wide)
        try:
            return MigProfileReader(reader).mig_profiles(0)  # names are not needed here
        except PortNVMLError as error:
            raise MigError(_on_card(self.address, str(error))) from error


class RealMig:
    def __init__(self, nvml: RealNVML) -> None:
        self.nvml = nvml

    def mig_enabled(self, card: str) -> bool:
        calls = _Card(self.nvml, card)
        mode = calls.mig_mode()
        return mode is not None and mode[0] == calls.nv.NVML_DEVICE_MIG_ENABLE

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        calls = _Card(self.nvml, card)
        nv = calls.nv
        wanted = nv.NVML_DEVICE_MIG_ENABLE if enabled else nv.NVML_DEVICE_MIG_DISABLE
        if calls.mig_mode() == (wanted, wanted):
            return  # nothing to change: no privileged call, no reset
        # The call succeeding sets the pending mode; the activation status says whether the driver
        # could also apply it (reset the idle card) or needs a reset (RESET_REQUIRED) or idle (IN_USE).
        status = int(calls.call("nvmlDeviceSetMigMode", calls.handle, wanted))
        current, pending = calls.mig_mode() or (None, None)
        if current == wanted:
            return
        why, hint = "the driver did not apply it", "reset the GPU (nvidia-smi -r) to apply it"
        if status != nv.NVML_SUCCESS:
            name = code_name(nv, status)
            why = f"{describe(nv.NVMLError(status))} [{name}]"
            hint = _HINTS.get(name.removeprefix("NVML_ERROR_"), hint)
        verb = "enable" if enabled else "disable"
        if pending == wanted:
            raise MigModePending(f"{calls.address}: MIG mode {verb} is pending: {why}; {hint}")
        raise MigError(f"{calls.address}: nvmlDeviceSetMigMode could not {verb} MIG: {why}; {hint}")

    def card_busy(self, card: str) -> bool:
        calls = _Card(self.nvml, card)
        # On a MIG card the parent handle reports the processes of every MIG device (as root).
        for kind, absent in (("Compute", ()), ("Graphics", ("NOT_SUPPORTED",))):
            for version in ("_v3", "_v2"):  # older drivers lack _v3 (FUNCTION_NOT_FOUND)
                query = f"nvmlDeviceGet{kind}RunningProcesses{version}"
                processes = calls.call(query, calls.handle, absent=("FUNCTION_NOT_FOUND", *absent))
                if processes is not None:
                    if processes:
                        return True
                    break
        return False

    def instances(self, card: str) -> list[MigInstance]:
        calls = _Card(self.nvml, card)
        mode = calls.mig_mode()
        if mode is None or mode[0] != calls.nv.NVML_DEVICE_MIG_ENABLE:
            return []  # no instance exists outside MIG mode
        devices: dict[int, list[tuple[int, str]]] = {}
        for gi, ci, uuid in _mig_devices(calls):
            devices.setdefault(gi, []).append((ci, uuid))
        found: list[MigInstance] = []
        for profile in calls.profiles():
            for handle in _gpu_instances(calls, profile):
                info = calls.call("nvmlGpuInstanceGetInfo", handle)
                for ci, uuid in sorted(devices.get(int(info.id), [(NO_COMPUTE_INSTANCE, "")])):
                    found.append(_instance(calls.address, info, ci, uuid))
        return sorted(found, key=lambda i: (i.gpu_instance_id, i.compute_instance_id))

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        calls = _Card(self.nvml, card)
        nv, create = calls.nv, "nvmlDeviceCreateGpuInstanceWithPlacement"
        mode = calls.mig_mode()
        if mode is None or mode[0] != nv.NVML_DEVICE_MIG_ENABLE:
            raise MigError(f"{calls.address}: {create}: MIG mode is not enabled on the card; enable it first")
        profile = next((p for p in calls.profiles() if p.profile_id == profile_id), None)
        if profile is None:
            raise MigError(f"{calls.address}: {create}: the card has no GPU instance profile {profile_id}")
        size = next((p.size for p in profile.placements if p.start == placement_start), None)
        if size is None:
            starts = ", ".join(str(p.start) for p in profile.placements)
            raise MigError(
                f"{calls.address}: {create}: {placement_start} is not a placement of {profile.name} "
                f"(profile {profile_id}); its starts are {starts}"
            )
        placement = nv.c_nvmlGpuInstancePlacement_t()
        placement.start, placement.size = placement_start, size
        gi = calls.call(create, calls.handle, profile_id, ctypes.byref(placement))
        try:
            info = calls.call("nvmlGpuInstanceGetInfo", gi)
            ci = calls.call(
                "nvmlGpuInstanceCreateComputeInstance", gi, _full_compute_profile(calls, gi, profile)
            )
            try:
                ci_id = int(calls.call("nvmlComputeInstanceGetInfo", ci).id)
                uuid = next((u for g, c, u in _mig_devices(calls) if (g, c) == (int(info.id), ci_id)), None)
                if uuid is None:
                    raise MigError(
                        f"{calls.address}: no MIG device has GPU instance {info.id}, compute instance {ci_id}"
                    )
            except MigError:
                _undo(calls, "nvmlComputeInstanceDestroy", ci)
                raise
        except MigError:
            _undo(calls, "nvmlGpuInstanceDestroy", gi)  # a half-made instance would hold the slices
            raise
        return _instance(calls.address, info, ci_id, uuid)

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        calls = _Card(self.nvml, card)
        # NOT_SUPPORTED: MIG mode is off, so no instance exists; NOT_FOUND: already destroyed.
        gi = calls.call(
            "nvmlDeviceGetGpuInstanceById",
            calls.handle,
            gpu_instance_id,
            absent=("NOT_FOUND", "NOT_SUPPORTED"),
        )
        if gi is None:
            return
        if compute_instance_id != NO_COMPUTE_INSTANCE:
            ci = calls.call(
                "nvmlGpuInstanceGetComputeInstanceById", gi, compute_instance_id, absent=("NOT_FOUND",)
            )
            if ci is not None:
                calls.call("nvmlComputeInstanceDestroy", ci, absent=("NOT_FOUND",))
        calls.call("nvmlGpuInstanceDestroy", gi, absent=("NOT_FOUND",))


def _on_card(card: str, text: str) -> str:
    return text if text.startswith(card) else f"{card}: {text}"


def _instance(address: str, info: Any, ci: int, uuid: str) -> MigInstance:
    return MigInstance(
        card=address,
        gpu_instance_id=int(info.id),
        compute_instance_id=ci,
        profile_id=int(info.profileId),
        placement_start=int(info.placement.start),
        placement_size=int(info.placement.size),
        uuid=uuid,
    )


def _mig_devices(calls: _Card) -> list[tuple[int, int, str]]:
    """(GPU instance, compute instance, MIG UUID) of every MIG device: one per compute instance."""
    devices = []
    for index in range(int(calls.call("nvmlDeviceGetMaxMigDeviceCount", calls.handle))):
        mig = calls.call("nvmlDeviceGetMigDeviceHandleByIndex", calls.handle, index, absent=("NOT_FOUND",))
        if mig is None:
            continue  # the indexes are not packed: a destroyed device leaves a gap
        gi = int(calls.call("nvmlDeviceGetGpuInstanceId", mig))
        ci = int(calls.call("nvmlDeviceGetComputeInstanceId", mig))
        devices.append((gi, ci, str(calls.call("nvmlDeviceGetUUID", mig))))
    return devices


def _gpu_instances(calls: _Card, profile: GpuInstanceProfile) -> list[Any]:
    # The array must hold every instance the profile allows; count comes back filled in.
    array = (calls.nv.c_nvmlGpuInstance_t * max(profile.instance_count, 1))()
    count = ctypes.c_uint(0)
    args = (calls.handle, profile.profile_id, array, ctypes.byref(count))
    filled = calls.call("nvmlDeviceGetGpuInstances", *args, absent=("NOT_SUPPORTED",))
    return [] if filled is None else list(array[: count.value])


def _full_compute_profile(calls: _Card, gi: Any, profile: GpuInstanceProfile) -> int:
    """The id of the compute instance profile that spans the GPU instance, engines shared."""
    nv, query = calls.nv, "nvmlGpuInstanceGetComputeInstanceProfileInfo"
    for index in range(int(nv.NVML_COMPUTE_INSTANCE_PROFILE_COUNT)):
        for version in (2, 1):  # older drivers know only the unversioned call (pynvml's version 1)
            shared = nv.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
            info = calls.call(query, gi, index, shared, version, absent=_NO_COMPUTE_PROFILE)
            if info is not None:
                if int(info.sliceCount) == profile.slice_count:
                    return int(info.id)  # the first: 1_SLICE before its REV1, 7_SLICE before _NVL
                break
    raise MigError(
        f"{calls.address}: {query}: no compute instance profile spans the {profile.slice_count} "
        f"slices of {profile.name}"
    )


def _undo(calls: _Card, query: str, handle: Any) -> None:
    try:
        calls.call(query, handle, absent=("NOT_FOUND",))
    except MigError as error:
        log.warning("could not undo a half-made MIG instance: %s", error)
