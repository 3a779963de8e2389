# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One card's snapshot through RealNVML: every field, NOT_SUPPORTED blanks, a lost card failing alone."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.inventory.nvml_snapshot import Placement
from deckhouse_gpu.ports.nvml import NVMLQueryFailed
from tests.support import fake_pynvml
from tests.support.fake_pynvml import GPU_IS_LOST, Card, FakeLibrary, real_nvml

# Autouse: every test here starts from clean bindings (bound here so that pytest applies it).
fresh_bindings = fake_pynvml.fresh_bindings


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


def test_a_lost_card_fails_alone():
    library = FakeLibrary(Card(), Card("00000000:31:00.0", fail={"nvmlDeviceGetMemoryInfo": GPU_IS_LOST}))
    nvml = real_nvml(library)
    assert nvml.device_addresses() == ["0000:17:00.0", "0000:31:00.0"]
    with pytest.raises(NVMLQueryFailed) as failure:
        nvml.snapshot("0000:31:00.0")
    assert (failure.value.pci_address, failure.value.query) == ("0000:31:00.0", "nvmlDeviceGetMemoryInfo")
    assert "GPU is lost" in failure.value.detail
    assert nvml.snapshot("0000:17:00.0").name == "NVIDIA A30"
