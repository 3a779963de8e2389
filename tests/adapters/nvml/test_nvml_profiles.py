# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MIG profiles through RealNVML: struct versions v3/v2/v1, names, sizes and placements."""

from __future__ import annotations

import types

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml.nvml_profiles import mig_memory_gb
from deckhouse_gpu.ports.nvml import NVMLQueryFailed
from tests.support import fake_pynvml
from tests.support.fake_pynvml import (
    GPU_IS_LOST,
    MIB,
    NOT_SUPPORTED,
    VERSION_MISMATCH,
    Card,
    FakeLibrary,
    Profile,
    real_nvml,
)

# Autouse: every test here starts from clean bindings (bound here so that pytest applies it).
fresh_bindings = fake_pynvml.fresh_bindings


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


def test_unsupported_placements_leave_them_empty():
    card = Card(fail={"nvmlDeviceGetGpuInstancePossiblePlacements_v2": NOT_SUPPORTED})
    profiles = real_nvml(FakeLibrary(card)).snapshot("0000:17:00.0").mig_profiles
    assert len(profiles) == 4
    assert all(p.placements == () for p in profiles)


def test_a_failing_profile_query_fails_the_card():
    card = Card(fail={"nvmlDeviceGetGpuInstanceProfileInfoV": GPU_IS_LOST})
    with pytest.raises(NVMLQueryFailed, match=r"profile index 0, v2"):
        real_nvml(FakeLibrary(card)).snapshot("0000:17:00.0")
