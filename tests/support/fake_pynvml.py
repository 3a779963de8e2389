# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""A stand-in libnvidia-ml.so under the real nvidia-ml-py bindings, for RealNVML's tests.

The stand-in is what ``ctypes.CDLL`` would return: an object whose attributes are the C
functions, called with the same ctypes arguments pynvml passes and answering NVML return codes.
So the bindings' own argument handling, struct versions and error classes are exercised, only
the GPU is missing.
"""

from __future__ import annotations

import ctypes
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml_real import RealNVML

MIB = 1024 * 1024
NOT_SUPPORTED, INVALID_ARGUMENT, NOT_FOUND = 3, 2, 6
DRIVER_NOT_LOADED, GPU_IS_LOST, RM_MISMATCH, VERSION_MISMATCH = 9, 15, 18, 25
INSUFFICIENT_SIZE, RESET_REQUIRED, IN_USE, INSUFFICIENT_RESOURCES, NO_PERMISSION = 7, 16, 19, 23, 4
# NVML_COMPUTE_INSTANCE_PROFILE_* index -> compute slices; NVML's compute profile ids are the indexes.
CI_PROFILE_SLICES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 7: 1}


@dataclass
class Profile:
    index: int
    id: int
    name: str
    slices: int
    memory_mib: int
    instances: int
    placements: list[tuple[int, int]]


A30_PROFILES = [
    Profile(0, 14, "MIG 1g.6gb", 1, 5952, 4, [(0, 1), (1, 1), (2, 1), (3, 1)]),
    Profile(1, 5, "MIG 2g.12gb", 2, 11968, 2, [(0, 2), (2, 2)]),
    Profile(3, 0, "MIG 4g.24gb", 4, 24192, 1, [(0, 4)]),
    Profile(15, 21, "MIG 1g.6gb+me", 1, 5952, 1, [(0, 1), (1, 1), (2, 1), (3, 1)]),
]


@dataclass
class Card:
    bus_id: str = "00000000:17:00.0"
    name: str = "NVIDIA A30"
    uuid: str = "GPU-6a1e0c4e-4b2a-11ef-9b1e-0242ac120002"
    memory_mib: int = 24576
    architecture: int | None = 7
    part_number: str | None = "900-21001-0040-100"
    limits_mw: tuple[int, int] | None = (100_000, 165_000)
    limit_mw: int | None = 150_400
    enforced_mw: int | None = 149_600
    mig: tuple[int, int] | None = (0, 1)
    profiles: list[Profile] = field(default_factory=lambda: list(A30_PROFILES))
    fail: dict[str, int] = field(default_factory=dict)  # C function -> return code
    # MIG: nvmlDeviceSetMigMode's activation status (0: the new mode applies at once), the
    # processes on the card (graphics None: NOT_SUPPORTED), its instances and MIG device slots.
    activation: int = 0
    compute_pids: list[int] = field(default_factory=list)
    graphics_pids: list[int] | None = None
    gpu_instances: dict[int, GpuInstance] = field(default_factory=dict)
    mig_slots: list[tuple[int, int] | None] = field(default_factory=lambda: [None] * 7)
    created: int = 0


@dataclass
class GpuInstance:
    id: int
    profile: Profile
    start: int
    compute: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> (profile index, serial)


def _put(ref: Any, value: Any) -> int:
    ref._obj.value = value
    return 0


class FakeLibrary:
    """libnvidia-ml.so as pynvml sees it; ``missing`` functions make getattr fail like dlsym."""

    def __init__(self, *cards: Card, init_code: int = 0, missing: tuple[str, ...] = ()) -> None:
        self.cards, self.init_code, self.missing = list(cards), init_code, set(missing)
        self.calls: Counter[str] = Counter()

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("nvml"):
            return object.__getattribute__(self, name)
        if name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)
        method = object.__getattribute__(self, name)
        calls = object.__getattribute__(self, "calls")

        def counted(*args: Any) -> int:
            calls[name] += 1
            return int(method(*args))

        return counted

    def _card(self, handle: Any, function: str) -> tuple[Card, int]:
        card = self.cards[_decode(handle)[0]]
        return card, card.fail.get(function, 0)

    def nvmlInitWithFlags(self, flags: int) -> int:
        return self.init_code

    def nvmlShutdown(self) -> int:
        return 0

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"580.95.05"
        return 0

    def nvmlSystemGetCudaDriverVersion_v2(self, ref: Any) -> int:
        return _put(ref, 13000)

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        return _put(ref, len(self.cards))

    def _set_handle(self, ref: Any, index: int) -> int:
        pointer = ctypes.c_void_p(index + 1)
        ctypes.memmove(ctypes.addressof(ref._obj), ctypes.byref(pointer), ctypes.sizeof(pointer))
        return self.cards[index].fail.get("handle", 0)

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        return self._set_handle(ref, index.value)

    def nvmlDeviceGetHandleByPciBusId_v2(self, bus_id: Any, ref: Any) -> int:
        wanted = [int(part, 16) for part in bus_id.value.decode().replace(".", ":").split(":")]
        for index, card in enumerate(self.cards):
            if [int(part, 16) for part in card.bus_id.replace(".", ":").split(":")] == wanted:
                return self._set_handle(ref, index)
        return NOT_FOUND

    def nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetPciInfo_v3")
        ref._obj.busId = card.bus_id.encode()
        return code

    def _text(self, handle: Any, function: str, buffer: Any, value: str | None) -> int:
        code = self._card(handle, function)[1]
        if value is None:
            return NOT_SUPPORTED
        buffer.value = value.encode()
        return code

    def nvmlDeviceGetName(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text(handle, "nvmlDeviceGetName", buffer, self._card(handle, "")[0].name)

    def nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        card, gi, ci = self._card(handle, "")[0], *_decode(handle)[1:]
        text = card.uuid if gi < 0 else mig_uuid(card, gi, ci)  # a MIG device handle: its own UUID
        return self._text(handle, "nvmlDeviceGetUUID", buffer, text)

    def nvmlDeviceGetBoardPartNumber(self, handle: Any, buffer: Any, size: Any) -> int:
        return self._text(
            handle, "nvmlDeviceGetBoardPartNumber", buffer, self._card(handle, "")[0].part_number
        )

    def nvmlDeviceGetMemoryInfo(self, handle: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetMemoryInfo")
        ref._obj.total = card.memory_mib * MIB
        return code

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any, major: Any, minor: Any) -> int:
        _put(major, 8)
        return _put(minor, 0)

    def _number(self, handle: Any, function: str, refs: tuple[Any, ...], values: Any) -> int:
        code = self._card(handle, function)[1]
        if values is None:
            return NOT_SUPPORTED
        for ref, value in zip(refs, values if isinstance(values, tuple) else (values,), strict=True):
            _put(ref, value)
        return code

    def nvmlDeviceGetArchitecture(self, handle: Any, ref: Any) -> int:
        return self._number(
            handle, "nvmlDeviceGetArchitecture", (ref,), self._card(handle, "")[0].architecture
        )

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any, low: Any, high: Any) -> int:
        card = self._card(handle, "")[0]
        return self._number(
            handle, "nvmlDeviceGetPowerManagementLimitConstraints", (low, high), card.limits_mw
        )

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any, ref: Any) -> int:
        return self._number(
            handle, "nvmlDeviceGetPowerManagementLimit", (ref,), self._card(handle, "")[0].limit_mw
        )

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any, ref: Any) -> int:
        return self._number(
            handle, "nvmlDeviceGetEnforcedPowerLimit", (ref,), self._card(handle, "")[0].enforced_mw
        )

    def nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        return self._number(handle, "nvmlDeviceGetMigMode", (current, pending), self._card(handle, "")[0].mig)

    def _profile(self, handle: Any, function: str, index: int, info: Any) -> int:
        card, code = self._card(handle, function)
        profile = next((p for p in card.profiles if p.index == index), None)
        if code or profile is None:
            return code or (
                INVALID_ARGUMENT if index >= pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT else NOT_SUPPORTED
            )
        info.id, info.sliceCount, info.instanceCount = profile.id, profile.slices, profile.instances
        info.memorySizeMB, info.multiprocessorCount, info.copyEngineCount = (
            profile.memory_mib,
            14 * profile.slices,
            1,
        )
        if hasattr(info, "name"):
            info.name = profile.name.encode()
        return 0

    def nvmlDeviceGetGpuInstanceProfileInfoV(self, handle: Any, index: int, ref: Any) -> int:
        assert ref._obj.version == pynvml.nvmlGpuInstanceProfileInfo_v2
        return self._profile(handle, "nvmlDeviceGetGpuInstanceProfileInfoV", index, ref._obj)

    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle: Any, index: int, ref: Any) -> int:
        return self._profile(handle, "nvmlDeviceGetGpuInstanceProfileInfo", index, ref._obj)

    def nvmlDeviceGetGpuInstancePossiblePlacements_v2(
        self, handle: Any, profile_id: int, out: Any, count: Any
    ) -> int:
        card, code = self._card(handle, "nvmlDeviceGetGpuInstancePossiblePlacements_v2")
        placements = next(p.placements for p in card.profiles if p.id == profile_id)
        if code:
            return code
        if out is not None:
            assert len(out) >= len(placements)
            for slot, (start, size) in zip(out, placements, strict=False):
                slot.start, slot.size = start, size
        return _put(count, len(placements))

    # MIG. Handles of GPU instances, compute instances and MIG devices encode (card, gi, ci), so
    # that each call finds what it refers to. Only the driver's basic refusals are modelled (MIG
    # mode, placement, overlap, compute slices); sim_mig has the full rules.
    def _instance(self, handle: Any, function: str) -> tuple[Card, GpuInstance | None, int]:
        index, gi, _ = _decode(handle)
        card = self.cards[index]
        return card, card.gpu_instances.get(gi), card.fail.get(function, 0)

    def nvmlDeviceSetMigMode(self, handle: Any, mode: int, status: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceSetMigMode")
        if code or card.mig is None:
            return code or NOT_SUPPORTED
        if not mode and card.gpu_instances:
            return IN_USE
        card.mig = (mode if card.activation == 0 else card.mig[0], mode)
        return _put(status, card.activation)

    def _processes(self, handle: Any, function: str, count: Any, infos: Any, pids: list[int] | None) -> int:
        code = self._card(handle, function)[1]
        if code or pids is None:
            return code or NOT_SUPPORTED
        _put(count, len(pids))
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
        return _write_handle(ref._obj, self.cards.index(card), gi)

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
        return _write_handle(ref._obj, self.cards.index(card), gi.id, ci)

    def nvmlComputeInstanceGetInfo_v2(self, handle: Any, ref: Any) -> int:
        _, gi, code = self._instance(handle, "nvmlComputeInstanceGetInfo_v2")
        ci = _decode(handle)[2]
        if code or gi is None or ci not in gi.compute:
            return code or INVALID_ARGUMENT
        ref._obj.id, ref._obj.profileId = ci, gi.compute[ci][0]
        return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetMaxMigDeviceCount")
        return code or _put(ref, len(card.mig_slots) if card.mig and card.mig[0] else 0)

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        slot = card.mig_slots[index.value]
        if code or slot is None:
            return code or NOT_FOUND
        return _write_handle(ref._obj, self.cards.index(card), *slot)

    def nvmlDeviceGetGpuInstanceId(self, handle: Any, ref: Any) -> int:
        return _put(ref, _decode(handle)[1])

    def nvmlDeviceGetComputeInstanceId(self, handle: Any, ref: Any) -> int:
        return _put(ref, _decode(handle)[2])

    def nvmlDeviceGetGpuInstances(self, handle: Any, profile_id: int, array: Any, count: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetGpuInstances")
        if code or not card.mig or not card.mig[0]:
            return code or NOT_SUPPORTED
        found = [gi for gi in card.gpu_instances.values() if gi.profile.id == profile_id]
        assert len(array) >= len(found)
        for position, gi in enumerate(found):
            _write_handle(array, self.cards.index(card), gi.id, at=position)
        return _put(count, len(found))

    def nvmlDeviceGetGpuInstanceById(self, handle: Any, gi: int, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetGpuInstanceById")
        if code or not card.mig or not card.mig[0]:
            return code or NOT_SUPPORTED
        return _write_handle(ref._obj, self.cards.index(card), gi) if gi in card.gpu_instances else NOT_FOUND

    def nvmlGpuInstanceGetComputeInstanceById(self, handle: Any, ci: int, ref: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlGpuInstanceGetComputeInstanceById")
        if code or gi is None:
            return code or INVALID_ARGUMENT
        return _write_handle(ref._obj, self.cards.index(card), gi.id, ci) if ci in gi.compute else NOT_FOUND

    def nvmlComputeInstanceDestroy(self, handle: Any) -> int:
        card, gi, code = self._instance(handle, "nvmlComputeInstanceDestroy")
        ci = _decode(handle)[2]
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


def _decode(handle: Any) -> tuple[int, int, int]:
    """(card index, GPU instance id, compute instance id) of a handle; -1 for the parts it lacks."""
    value = ctypes.cast(handle, ctypes.c_void_p).value or 0
    return (value & 0xFF) - 1, (value >> 8 & 0xFF) - 1, (value >> 16 & 0xFF) - 1


def _write_handle(target: Any, index: int, gi: int = -1, ci: int = -1, *, at: int = 0) -> int:
    pointer = ctypes.c_void_p((index + 1) | (gi + 1) << 8 | (ci + 1) << 16)
    size = ctypes.sizeof(pointer)
    ctypes.memmove(ctypes.addressof(target) + at * size, ctypes.byref(pointer), size)
    return 0


def mig_uuid(card: Card, gi: int, ci: int) -> str:
    """A MIG device's UUID: new for every compute instance created, as the driver's are."""
    serial = card.gpu_instances[gi].compute[ci][1]
    return f"MIG-{uuid.uuid5(uuid.NAMESPACE_URL, f'{card.uuid}/{gi}/{ci}/{serial}')}"


@pytest.fixture(autouse=True)
def fresh_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    # pynvml keeps the library handle and resolved functions per process: start each test clean.
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    monkeypatch.setattr(pynvml, "_nvmlLib_refcount", 0)


def real_nvml(library: FakeLibrary, opened: list[str] | None = None) -> RealNVML:
    def load(path: str) -> FakeLibrary:
        (opened if opened is not None else []).append(path)
        return library

    return RealNVML("/driver-root/usr/lib64/libnvidia-ml.so.1", bindings=pynvml, load_library=load)
