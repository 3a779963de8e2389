# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""A stand-in libnvidia-ml.so under the real nvidia-ml-py bindings, for RealNVML's tests.

The stand-in is what ``ctypes.CDLL`` would return: an object whose attributes are the C
functions, called with the same ctypes arguments pynvml passes and answering NVML return codes.
So the bindings' own argument handling, struct versions and error classes are exercised, only
the GPU is missing.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml_real import RealNVML

MIB = 1024 * 1024
NOT_SUPPORTED, INVALID_ARGUMENT, NOT_FOUND = 3, 2, 6
DRIVER_NOT_LOADED, GPU_IS_LOST, RM_MISMATCH, VERSION_MISMATCH = 9, 15, 18, 25


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
        card = self.cards[(ctypes.cast(handle, ctypes.c_void_p).value or 0) - 1]
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
        return self._text(handle, "nvmlDeviceGetUUID", buffer, self._card(handle, "")[0].uuid)

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
