# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""The MIG functions of the stand-in libnvidia-ml.so (tests/support/fake_pynvml.py): MIG mode, the
processes on a card, and creating, finding and destroying GPU instances, compute instances and
MIG devices. FakeLibrary gets them, and the card lookup both halves use, from MigFunctions.
"""

from __future__ import annotations

from typing import Any

import pynvml

from tests.support.fake_nvml_cards import (
    CI_PROFILE_SLICES,
    IN_USE,
    INSUFFICIENT_RESOURCES,
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_SUPPORTED,
    Card,
    GpuInstance,
    decode_handle,
    put,
    write_handle,
)


class MigFunctions:
    """NVML's MIG calls over ``cards``; a handle names its card by index (see decode_handle)."""

    cards: list[Card]

    def _card(self, handle: Any, function: str) -> tuple[Card, int]:
        card = self.cards[decode_handle(handle)[0]]
        return card, card.fail.get(function, 0)

    # MIG. Handles of GPU instances, compute instances and MIG devices encode (card, gi, ci), so
    # that each call finds what it refers to. Only the driver's basic refusals are modelled (MIG
    # mode, placement, overlap, compute slices); sim_mig has the full rules.
    def _instance(self, handle: Any, function: str) -> tuple[Card, GpuInstance | None, int]:
        index, gi, _ = decode_handle(handle)
        card = self.cards[index]
        return card, card.gpu_instances.get(gi), card.fail.get(function, 0)

    def nvmlDeviceSetMigMode(self, handle: Any, mode: int, status: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceSetMigMode")
        if code or card.mig is None:
            return code or NOT_SUPPORTED
        if not mode and card.gpu_instances:
            return IN_USE
        card.mig = (mode if card.activation == 0 else card.mig[0], mode)
        return put(status, card.activation)

    def _processes(self, handle: Any, function: str, count: Any, infos: Any, pids: list[int] | None) -> int:
        code = self._card(handle, function)[1]
        if code or pids is None:
            return code or NOT_SUPPORTED
        put(count, len(pids))
        if infos is None:  # pynvml first asks for the count, then passes an array that large
            return INSUFFICIENT_SIZE if pids else 0
        for slot, pid in zip(infos, pids, strict=False):
            slot.pid = pid
        return 0

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, infos: Any) -> int:
        card = self._card(handle, "")[0]
        return self._processes(
            handle, "nvmlDeviceGetComputeRunningProcesses_v3", count, infos, card.compute_pids
        )

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: Any, count: Any, infos: Any) -> int:
        card = self._card(handle, "")[0]
        return self._processes(
            handle, "nvmlDeviceGetComputeRunningProcesses_v2", count, infos, card.compute_pids
        )

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, infos: Any) -> int:
        card = self._card(handle, "")[0]
        return self._processes(
            handle, "nvmlDeviceGetGraphicsRunningProcesses_v3", count, infos, card.graphics_pids
        )

    def nvmlDeviceCreateGpuInstanceWithPlacement(
        self, handle: Any, profile_id: int, placement: Any, ref: Any
    ) -> int:
        # The C function takes a pointer: pynvml passes the argument on as given, so byref is a must.
        assert isinstance(placement._obj, pynvml.c_nvmlGpuInstancePlacement_t)
        card, code = self._card(handle, "nvmlDeviceCreateGpuInstanceWithPlacement")
        start, size = placement._obj.start, placement._obj.size
        profile = next((p for p in card.profiles if p.id == profile_id), None)
        if code or card.mig is None or card.mig[0] != 1:
            return code or NOT_SUPPORTED
        if profile is None or (start, size) not in profile.placements:
            return INVALID_ARGUMENT
        for other in card.gpu_instances.values():
            if start < other.start + other.profile.placements[0][1] and other.start < start + size:
                return INSUFFICIENT_RESOURCES
        gi = min(set(range(1, len(card.gpu_instances) + 2)) - set(card.gpu_instances))
        card.gpu_instances[gi] = GpuInstance(gi, profile, start)
        return write_handle(ref._obj, self.cards.index(card), gi)

    def nvmlGpuInstanceGetInfo(self, handle: Any, ref: Any) -> int:
        _, gi, code = self._instance(handle, "nvmlGpuInstanceGetInfo")
        if code or gi is None:
            return code or INVALID_ARGUMENT
        ref._obj.id, ref._obj.profileId = gi.id, gi.profile.id
        ref._obj.placement.start, ref._obj.placement.size = gi.start, gi.profile.placements[0][1]
        return 0

    def nvmlGpuInstanceGetComputeInstanceProfileInfoV(
        self, handle: Any, index: int, engines: int, ref: Any
    ) -> int:
        assert ref._obj.version == pynvml.nvmlComputeInstanceProfileInfo_v2
        return self._ci_profile(handle, "nvmlGpuInstanceGetComputeInstanceProfileInfoV", index, engines, ref)

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, handle: Any, index: int, engines: int, ref: Any
    ) -> int:
        return self._ci_profile(handle, "nvmlGpuInstanceGetComputeInstanceProfileInfo", index, engines, ref)

    def _ci_profile(self, handle: Any, function: str, index: int, engines: int, ref: Any) -> int:
        _, gi, code = self._instance(handle, function)
        if code or gi is None or engines != pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED:
            return code or INVALID_ARGUMENT
        if CI_PROFILE_SLICES.get(index, 99) > gi.profile.slices:
            return NOT_SUPPORTED
        ref._obj.id, ref._obj.sliceCount = index, CI_PROFILE_SLICES[index]
        return 0

    def nvmlGpuInstanceCreateComputeInstance(self, handle: Any, profile_id: int, ref: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlGpuInstanceCreateComputeInstance")
        if code or gi is None:
            return code or INVALID_ARGUMENT
        used = sum(CI_PROFILE_SLICES[index] for index, _ in gi.compute.values())
        if used + CI_PROFILE_SLICES[profile_id] > gi.profile.slices or None not in card.mig_slots:
            return INSUFFICIENT_RESOURCES
        ci = min(set(range(len(gi.compute) + 1)) - set(gi.compute))
        card.created += 1
        gi.compute[ci] = (profile_id, card.created)
        card.mig_slots[card.mig_slots.index(None)] = (gi.id, ci)
        return write_handle(ref._obj, self.cards.index(card), gi.id, ci)

    def nvmlComputeInstanceGetInfo_v2(self, handle: Any, ref: Any) -> int:
        _, gi, code = self._instance(handle, "nvmlComputeInstanceGetInfo_v2")
        ci = decode_handle(handle)[2]
        if code or gi is None or ci not in gi.compute:
            return code or INVALID_ARGUMENT
        ref._obj.id, ref._obj.profileId = ci, gi.compute[ci][0]
        return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetMaxMigDeviceCount")
        return code or put(ref, len(card.mig_slots) if card.mig and card.mig[0] else 0)

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        slot = card.mig_slots[index.value]
        if code or slot is None:
            return code or NOT_FOUND
        return write_handle(ref._obj, self.cards.index(card), *slot)

    def nvmlDeviceGetGpuInstanceId(self, handle: Any, ref: Any) -> int:
        return put(ref, decode_handle(handle)[1])

    def nvmlDeviceGetComputeInstanceId(self, handle: Any, ref: Any) -> int:
        return put(ref, decode_handle(handle)[2])

    def nvmlDeviceGetGpuInstances(self, handle: Any, profile_id: int, array: Any, count: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetGpuInstances")
        if code or not card.mig or not card.mig[0]:
            return code or NOT_SUPPORTED
        found = [gi for gi in card.gpu_instances.values() if gi.profile.id == profile_id]
        assert len(array) >= len(found)
        for position, gi in enumerate(found):
            write_handle(array, self.cards.index(card), gi.id, at=position)
        return put(count, len(found))

    def nvmlDeviceGetGpuInstanceById(self, handle: Any, gi: int, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetGpuInstanceById")
        if code or not card.mig or not card.mig[0]:
            return code or NOT_SUPPORTED
        return write_handle(ref._obj, self.cards.index(card), gi) if gi in card.gpu_instances else NOT_FOUND

    def nvmlGpuInstanceGetComputeInstanceById(self, handle: Any, ci: int, ref: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlGpuInstanceGetComputeInstanceById")
        if code or gi is None:
            return code or INVALID_ARGUMENT
        return write_handle(ref._obj, self.cards.index(card), gi.id, ci) if ci in gi.compute else NOT_FOUND

    def nvmlComputeInstanceDestroy(self, handle: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlComputeInstanceDestroy")
        ci = decode_handle(handle)[2]
        if code or gi is None or ci not in gi.compute:
            return code or NOT_FOUND
        del gi.compute[ci]
        card.mig_slots[card.mig_slots.index((gi.id, ci))] = None
        return 0

    def nvmlGpuInstanceDestroy(self, handle: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlGpuInstanceDestroy")
        if code or gi is None:
            return code or NOT_FOUND
        if gi.compute:
            return IN_USE
        del card.gpu_instances[gi.id]
        return 0
