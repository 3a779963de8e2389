# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from deckhouse_gpu.domain.inventory.nvidia_status import memory_slice_count, nvidia_view
from deckhouse_gpu.domain.inventory.nvml_snapshot import (
    DeviceSnapshot,
    DriverInfo,
    GpuInstanceProfile,
    Placement,
)
from deckhouse_gpu.domain.inventory.physicalgpu import Capabilities, NvidiaState
from deckhouse_gpu.k8s_semantics.apimachinery.codec import decode


def profile(pid, name, slices, count, placements, memory=5952, sms=14):
    return GpuInstanceProfile(
        pid, name, memory, slices, count, sms, slices, 0, 0, 0, 0, tuple(Placement(*p) for p in placements)
    )


A100_7G = profile(0, "7g.40gb", 7, 1, [(0, 8)], memory=40192, sms=98)
A100_1G = profile(19, "1g.5gb", 1, 7, [(i, 1) for i in range(7)], memory=4864)
DRIVER = DriverInfo("580.82.07", "13.0")


def snapshot(**extra):
    base = {
        "pci_address": "0000:17:00.0",
        "name": "NVIDIA A100-PCIE-40GB",
        "uuid": "GPU-1",
        "memory_total_mib": 40960,
        "compute_capability": (8, 0),
    }
    return DeviceSnapshot(**{**base, **extra})


def test_total_slices_counts_memory_slices_not_compute_slices():
    assert memory_slice_count((A100_1G, A100_7G)) == 8
    assert memory_slice_count((profile(14, "1g.6gb", 1, 4, []),)) == 4  # no placements: slices x instances


def test_mig_card_view():
    snap = snapshot(
        architecture="Ampere",
        power_limit_min_w=150,
        power_limit_max_w=250,
        power_limit_current_w=250,
        mig_supported=True,
        mig_current_enabled=False,
        mig_pending_enabled=True,
        mig_profiles=(A100_7G, A100_1G),
    )
    view = nvidia_view(snap, DRIVER)
    caps = view.capabilities
    assert caps["vendor"] == "Nvidia"
    assert caps["memoryMiB"] == 40960
    nvidia = caps["nvidia"]
    assert nvidia["computeCap"] == "8.0"
    assert "BF16" in nvidia["computeTypes"]
    assert nvidia["mig"]["totalSlices"] == 8
    assert [p["name"] for p in nvidia["mig"]["profiles"]] == ["1g.5gb", "7g.40gb"]
    assert nvidia["mig"]["profiles"][1]["placements"] == [{"start": 0, "size": 8}]
    state = view.current_state
    assert state == {
        "gpuUUID": "GPU-1",
        "driverVersion": "580.82.07",
        "cudaVersion": "13.0",
        "powerLimitCurrentW": 250,
        "mig": {"mode": "Disabled", "pendingMode": "Enabled"},
    }
    decode(Capabilities, caps)  # what the handler writes fits the CRD models
    decode(NvidiaState, state)


def test_card_without_mig_has_no_mig_blocks_at_all():
    view = nvidia_view(snapshot(name="Tesla T4", compute_capability=(7, 5)), DRIVER)
    assert view.capabilities["nvidia"]["migSupported"] is False
    assert "mig" not in view.capabilities["nvidia"]
    assert "mig" not in view.current_state
    assert view.capabilities["nvidia"]["productArchitecture"] == "Turing"  # derived when NVML is silent


def test_unreadable_mig_mode_is_left_out():
    view = nvidia_view(snapshot(mig_supported=True, mig_profiles=(A100_7G,)), DRIVER)
    assert "mig" not in view.current_state
    assert view.capabilities["nvidia"]["mig"]["totalSlices"] == 8


def test_pending_mode_only_when_it_differs():
    snap = snapshot(
        mig_supported=True, mig_current_enabled=True, mig_pending_enabled=True, mig_profiles=(A100_7G,)
    )
    assert nvidia_view(snap, DRIVER).current_state["mig"] == {"mode": "Enabled"}
