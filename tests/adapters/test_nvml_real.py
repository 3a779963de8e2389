# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""RealNVML against the real nvidia-ml-py bindings over a stand-in libnvidia-ml.so.

The stand-in is what ``ctypes.CDLL`` would return: an object whose attributes are the C
functions, called with the same ctypes arguments pynvml passes and answering NVML return codes.
So the bindings' own argument handling, struct versions and error classes are exercised, only
the GPU is missing.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml_real import RealNVML, cuda_version_text, mig_memory_gb, normalize_pci_address
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLQueryFailed, NVMLUnavailable, Placement

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


@pytest.mark.parametrize(
    ("bus_id", "address"),
    [
        ("00000000:17:00.0", "0000:17:00.0"),
        (b"00000000:B1:00.0\x00", "0000:b1:00.0"),
        ("0000:CA:00.0", "0000:ca:00.0"),
        ("0000:17:00.0", "0000:17:00.0"),
        ("0:3:0.1", "0000:03:00.1"),
    ],
)
def test_pci_addresses_are_normalised_to_sysfs_form(bus_id, address):
    assert normalize_pci_address(bus_id) == address


def test_garbage_is_not_an_address():
    with pytest.raises(ValueError, match="not a PCI address"):
        normalize_pci_address("GPU-17")


def test_snapshot_reads_every_field_from_an_explicitly_loaded_library():
    opened: list[str] = []
    nvml = real_nvml(FakeLibrary(Card()), opened)
    snapshot = nvml.snapshot("0000:17:00.0")
    assert opened == ["/driver-root/usr/lib64/libnvidia-ml.so.1"]
    assert nvml.driver().driver_version == "580.95.05"
    assert nvml.driver().cuda_version == "13.0"
    assert (snapshot.pci_address, snapshot.name, snapshot.uuid) == (
        "0000:17:00.0",
        "NVIDIA A30",
        "GPU-6a1e0c4e-4b2a-11ef-9b1e-0242ac120002",
    )
    assert (snapshot.memory_total_mib, snapshot.compute_capability, snapshot.architecture) == (
        24576,
        (8, 0),
        "Ampere",
    )
    assert snapshot.board_part_number == "900-21001-0040-100"
    limits = (snapshot.power_limit_min_w, snapshot.power_limit_max_w)
    assert (*limits, snapshot.power_limit_current_w, snapshot.power_limit_enforced_w) == (100, 165, 150, 150)
    assert (snapshot.mig_supported, snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (
        True,
        False,
        True,
    )
    assert [(p.profile_id, p.name, p.memory_mib, p.slice_count) for p in snapshot.mig_profiles] == [
        (14, "1g.6gb", 5952, 1),
        (5, "2g.12gb", 11968, 2),
        (0, "4g.24gb", 24192, 4),
        (21, "1g.6gb+me", 5952, 1),
    ]
    assert snapshot.mig_profiles[1].placements == (Placement(0, 2), Placement(2, 2))
    assert snapshot.mig_profiles[1].instance_count == 2
    assert snapshot.mig_profiles[1].multiprocessors == 28


def test_device_addresses_are_normalised_and_sorted():
    nvml = real_nvml(FakeLibrary(Card("00000000:CA:00.0"), Card("00000000:17:00.0")))
    assert nvml.device_addresses() == ["0000:17:00.0", "0000:ca:00.0"]


def test_not_supported_answers_leave_fields_empty():
    card = Card(
        architecture=None, part_number=None, limits_mw=None, limit_mw=None, enforced_mw=None, mig=None
    )
    snapshot = real_nvml(FakeLibrary(card)).snapshot("0000:17:00.0")
    assert snapshot.architecture is snapshot.board_part_number is None
    assert snapshot.power_limit_min_w is snapshot.power_limit_max_w is None
    assert snapshot.power_limit_current_w is snapshot.power_limit_enforced_w is None
    assert (snapshot.mig_supported, snapshot.mig_current_enabled, snapshot.mig_profiles) == (False, None, ())


@pytest.mark.parametrize(("code", "name"), [(9, "Hopper"), (10, "Blackwell"), (0xFFFFFFFF, None), (11, None)])
def test_architecture_codes_are_named(code, name):
    assert real_nvml(FakeLibrary(Card(architecture=code))).snapshot("0000:17:00.0").architecture == name


def test_profiles_use_v2_when_the_bindings_have_no_v3():
    library = FakeLibrary(Card())
    real_nvml(library).snapshot("0000:17:00.0")
    # One call per profile index: v3 is refused inside pynvml, v1 is never needed.
    assert library.calls["nvmlDeviceGetGpuInstanceProfileInfoV"] == 32
    assert library.calls["nvmlDeviceGetGpuInstanceProfileInfo"] == 0


def test_profiles_prefer_v3_when_the_bindings_offer_it(monkeypatch):
    original = pynvml.nvmlDeviceGetGpuInstanceProfileInfo

    def with_v3(handle, index, version=2):
        if version != 3:
            return original(handle, index, version)
        if index != 0:
            raise pynvml.NVMLError(NOT_SUPPORTED)
        counts = {"sliceCount": 1, "instanceCount": 4, "memorySizeMB": 5952, "multiprocessorCount": 14}
        engines = {"copyEngineCount": 1, "decoderCount": 1, "encoderCount": 0, "jpegCount": 0, "ofaCount": 0}
        return types.SimpleNamespace(id=14, name=b"MIG 1g.6gb", capabilities=0, **counts, **engines)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetGpuInstanceProfileInfo", with_v3)
    library = FakeLibrary(Card())
    profiles = real_nvml(library).snapshot("0000:17:00.0").mig_profiles
    assert [(p.profile_id, p.name, p.decoders) for p in profiles] == [(14, "1g.6gb", 1)]
    assert library.calls["nvmlDeviceGetGpuInstanceProfileInfoV"] == 0


@pytest.mark.parametrize(
    "older_driver",
    [
        {"missing": ("nvmlDeviceGetGpuInstanceProfileInfoV",)},
        {"card": Card(fail={"nvmlDeviceGetGpuInstanceProfileInfoV": VERSION_MISMATCH})},
    ],
    ids=["no-v2-symbol", "v2-version-mismatch"],
)
def test_profiles_fall_back_to_v1_and_name_them_from_size(older_driver):
    library = FakeLibrary(older_driver.get("card", Card()), missing=older_driver.get("missing", ()))
    profiles = real_nvml(library).snapshot("0000:17:00.0").mig_profiles
    # v1 carries no names: "<slices>g.<GB>gb" as NVIDIA names them (the +me variant loses its suffix).
    assert [p.name for p in profiles] == ["1g.6gb", "2g.12gb", "4g.24gb", "1g.6gb"]


def test_empty_names_fall_back_to_the_size_name():
    a100 = [Profile(0, 19, "", 1, 4864, 7, [(0, 1)]), Profile(4, 0, "MIG ", 7, 40192, 1, [(0, 8)])]
    profiles = (
        real_nvml(FakeLibrary(Card(memory_mib=40960, profiles=a100))).snapshot("0000:17:00.0").mig_profiles
    )
    assert [p.name for p in profiles] == ["1g.5gb", "7g.40gb"]


@pytest.mark.parametrize(
    ("profile_mib", "total_mib", "gb"),
    [
        (4864, 40960, 5),
        (40192, 40960, 40),
        (9856, 81559, 10),
        (5952, 24576, 6),
        (11968, 24576, 12),
        (2048, 0, 2),
    ],
)
def test_mig_memory_gb_rounds_like_nvidia(profile_mib, total_mib, gb):
    assert mig_memory_gb(profile_mib, total_mib * MIB) == gb


def test_cuda_versions_are_major_dot_minor():
    assert (cuda_version_text(12040), cuda_version_text(13000), cuda_version_text(0)) == (
        "12.4",
        "13.0",
        None,
    )


def test_unsupported_placements_leave_them_empty():
    card = Card(fail={"nvmlDeviceGetGpuInstancePossiblePlacements_v2": NOT_SUPPORTED})
    profiles = real_nvml(FakeLibrary(card)).snapshot("0000:17:00.0").mig_profiles
    assert len(profiles) == 4
    assert all(p.placements == () for p in profiles)


def test_a_lost_card_fails_alone():
    library = FakeLibrary(Card(), Card("00000000:31:00.0", fail={"nvmlDeviceGetMemoryInfo": GPU_IS_LOST}))
    nvml = real_nvml(library)
    assert nvml.device_addresses() == ["0000:17:00.0", "0000:31:00.0"]
    with pytest.raises(NVMLQueryFailed) as failure:
        nvml.snapshot("0000:31:00.0")
    assert (failure.value.pci_address, failure.value.query) == ("0000:31:00.0", "nvmlDeviceGetMemoryInfo")
    assert "GPU is lost" in failure.value.detail
    assert nvml.snapshot("0000:17:00.0").name == "NVIDIA A30"


def test_a_failing_profile_query_fails_the_card():
    card = Card(fail={"nvmlDeviceGetGpuInstanceProfileInfoV": GPU_IS_LOST})
    with pytest.raises(NVMLQueryFailed, match=r"profile index 0, v2"):
        real_nvml(FakeLibrary(card)).snapshot("0000:17:00.0")


def test_a_card_nvml_cannot_reach_is_left_out_of_the_addresses():
    library = FakeLibrary(Card(fail={"handle": GPU_IS_LOST}), Card("00000000:31:00.0"))
    assert real_nvml(library).device_addresses() == ["0000:31:00.0"]


def test_an_unknown_address_is_not_found():
    nvml = real_nvml(FakeLibrary(Card()))
    with pytest.raises(NVMLDeviceNotFound, match=r"0000:99:00\.0"):
        nvml.snapshot("0000:99:00.0")
    with pytest.raises(NVMLDeviceNotFound):
        nvml.snapshot("not-an-address")


def test_a_library_that_cannot_be_opened_makes_nvml_unavailable():
    def load(path: str) -> Any:
        raise OSError(f"{path}: cannot open shared object file: No such file or directory")

    nvml = RealNVML("/driver-root/usr/lib64/libnvidia-ml.so.1", bindings=pynvml, load_library=load)
    with pytest.raises(NVMLUnavailable, match="cannot load the NVML library /driver-root/usr/lib64"):
        nvml.device_addresses()


def test_without_a_path_a_missing_library_makes_nvml_unavailable(monkeypatch):
    def no_library(name: str) -> Any:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pynvml, "CDLL", no_library)  # what pynvml's own loader calls
    with pytest.raises(
        NVMLUnavailable, match=r"nvmlInit failed: NVML Shared Library Not Found.*libnvidia-ml"
    ):
        RealNVML(bindings=pynvml).driver()


def test_bindings_are_imported_from_sys_modules_on_first_use(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    nvml = RealNVML(load_library=lambda path: FakeLibrary(Card()), library_path="/lib/libnvidia-ml.so.1")
    assert nvml.device_addresses() == ["0000:17:00.0"]


def test_an_unloaded_kernel_module_makes_nvml_unavailable():
    with pytest.raises(NVMLUnavailable, match="kernel module is not loaded"):
        real_nvml(FakeLibrary(Card(), init_code=DRIVER_NOT_LOADED)).driver()


def test_nvml_is_initialised_once_across_threads():
    library = FakeLibrary(Card(), Card("00000000:31:00.0"))
    nvml = real_nvml(library)
    threads = [threading.Thread(target=nvml.snapshot, args=("0000:31:00.0",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    nvml.device_addresses()
    nvml.driver()
    assert library.calls["nvmlInitWithFlags"] == 1
    assert library.calls["nvmlSystemGetDriverVersion"] == 1


def test_a_library_wide_failure_initialises_again_next_time():
    card = Card(fail={"nvmlDeviceGetMemoryInfo": RM_MISMATCH})
    library = FakeLibrary(card)
    nvml = real_nvml(library)
    with pytest.raises(NVMLUnavailable, match="reboot the node"):
        nvml.snapshot("0000:17:00.0")
    card.fail.clear()
    assert nvml.snapshot("0000:17:00.0").memory_total_mib == 24576
    assert library.calls["nvmlInitWithFlags"] == 2
