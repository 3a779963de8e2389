# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""A stand-in libnvidia-ml.so under the real nvidia-ml-py bindings, for RealNVML's tests.

The stand-in is what ``ctypes.CDLL`` would return: an object whose attributes are the C
functions, called with the same ctypes arguments pynvml passes and answering NVML return codes.
So the bindings' own argument handling, struct versions and error classes are exercised, only
the GPU is missing.

The cards and their handles are in tests/support/fake_nvml_cards.py, the MIG functions in
tests/support/fake_nvml_mig.py, the event functions in tests/support/fake_nvml_events.py; this
module re-exports what the tests import from it.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML
from tests.support.fake_nvml_cards import (
    A30_PROFILES,
    CI_PROFILE_SLICES,
    DRIVER_NOT_LOADED,
    GPU_IS_LOST,
    IN_USE,
    INSUFFICIENT_RESOURCES,
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    MIB,
    NO_PERMISSION,
    NOT_FOUND,
    NOT_SUPPORTED,
    RESET_REQUIRED,
    RM_MISMATCH,
    VERSION_MISMATCH,
    Card,
    GpuInstance,
    Profile,
    decode_handle,
    mig_uuid,
    put,
)
from tests.support.fake_nvml_events import EventFunctions, EventSet
from tests.support.fake_nvml_mig import MigFunctions

__all__ = [
    "A30_PROFILES",
    "CI_PROFILE_SLICES",
    "DRIVER_NOT_LOADED",
    "GPU_IS_LOST",
    "INSUFFICIENT_RESOURCES",
    "INSUFFICIENT_SIZE",
    "INVALID_ARGUMENT",
    "IN_USE",
    "MIB",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "NO_PERMISSION",
    "RESET_REQUIRED",
    "RM_MISMATCH",
    "VERSION_MISMATCH",
    "Card",
    "FakeLibrary",
    "GpuInstance",
    "Profile",
    "fresh_bindings",
    "mig_uuid",
    "real_nvml",
]


class FakeLibrary(MigFunctions, EventFunctions):
    """libnvidia-ml.so as pynvml sees it; ``missing`` functions make getattr fail like dlsym."""

    def __init__(self, *cards: Card, init_code: int = 0, missing: tuple[str, ...] = ()) -> None:
        self.cards, self.init_code, self.missing = list(cards), init_code, set(missing)
        self.calls: Counter[str] = Counter()
        self.event_sets: dict[int, EventSet] = {}  # Xid events: tests/support/fake_nvml_events.py
        self.no_events: set[int] = set()
        self.wait_code = 0

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

    def nvmlInitWithFlags(self, flags: int) -> int:
        return self.init_code

    def nvmlShutdown(self) -> int:
        return 0

    def nvmlSystemGetDriverVersion(self, buffer: Any, size: Any) -> int:
        buffer.value = b"580.95.05"
        return 0

    def nvmlSystemGetCudaDriverVersion_v2(self, ref: Any) -> int:
        return put(ref, 13000)

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        return put(ref, len(self.cards))

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
        card, gi, ci = self._card(handle, "")[0], *decode_handle(handle)[1:]
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
        put(major, 8)
        return put(minor, 0)

    def _number(self, handle: Any, function: str, refs: tuple[Any, ...], values: Any) -> int:
        code = self._card(handle, function)[1]
        if values is None:
            return NOT_SUPPORTED
        for ref, value in zip(refs, values if isinstance(values, tuple) else (values,), strict=True):
            put(ref, value)
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

    def nvmlDeviceGetComputeMode(self, handle: Any, ref: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceGetComputeMode")
        return code or put(ref, card.compute_mode)

    def nvmlDeviceSetComputeMode(self, handle: Any, mode: Any) -> int:
        card, code = self._card(handle, "nvmlDeviceSetComputeMode")
        if not code:
            card.compute_mode = mode.value  # pynvml passes an nvmlComputeMode_t by value
        return code

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
        return put(count, len(placements))


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
