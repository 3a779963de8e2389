# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A device's sharing from its config and share, and which shares cannot sit on one card."""

from dataclasses import replace
from fractions import Fraction

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MPS, MpsPlan
from deckhouse_gpu.domain.config.opaque_types import GPUConfig, MIGConfig, VFIOConfig
from deckhouse_gpu.domain.config.sharing_strategy import SharingPlan
from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval, TimeSlicePlan, TimeSlicing
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import (
    SharingRefused,
    asked_memory_mib,
    card_settings,
    device_sharing,
    share_percent,
    sharing_conflicts,
)
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity

A30_MIB = 24576
CARD = "0000:17:00.0"


def share(share_id: str, sharing: SharingPlan | None = None) -> DevicePlan:
    plan = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", CARD, "Physical", share_id=share_id)
    return replace(plan, sharing=sharing)


def entry(uid: str, *devices: DevicePlan) -> ClaimEntry:
    return ClaimEntry(uid, "ns", f"claim-{uid}", "PrepareCompleted", devices)


def test_a_share_percent_comes_from_the_consumed_capacity_and_only_shares_have_one():
    assert share_percent({"shareID": "s1", "consumedCapacity": {"sharePercent": "25"}}) == 25
    assert share_percent({"shareID": "s1"}) == 100  # the offer's default request
    assert share_percent({"consumedCapacity": {"sharePercent": "25"}}) is None  # not a share
    with pytest.raises(SharingRefused, match="not a quantity"):
        share_percent({"shareID": "s1", "consumedCapacity": {"sharePercent": "a lot"}})


def test_mps_limits_come_from_the_share_when_the_config_sets_none():
    sharing = device_sharing(GPUConfig(MPS()), Fraction(25), A30_MIB)
    assert sharing == MpsPlan(thread_percentage=25, memory_limit_mib=6144)
    odd = device_sharing(GPUConfig(MPS()), Fraction(33), A30_MIB)
    assert odd == MpsPlan(thread_percentage=33, memory_limit_mib=8110)


def test_limits_the_config_sets_win_when_they_fit_the_share():
    config = GPUConfig(
        MPS(default_active_thread_percentage=20, default_pinned_device_memory_limit=Quantity.parse("4Gi"))
    )
    sharing = device_sharing(config, Fraction(25), A30_MIB)
    assert sharing == MpsPlan(thread_percentage=20, memory_limit_mib=4096)


def test_limits_above_the_share_are_refused_with_what_to_change():
    threads = GPUConfig(MPS(default_active_thread_percentage=50))
    with pytest.raises(
        SharingRefused,
        match=r"defaultActiveThreadPercentage 50 is above the claim's share of the card \(25 %\)",
    ):
        device_sharing(threads, Fraction(25), A30_MIB)
    memory = GPUConfig(MPS(default_pinned_device_memory_limit=Quantity.parse("8Gi")))
    with pytest.raises(SharingRefused, match=r"8192Mi is above the claim's share .* = 6144Mi"):
        device_sharing(memory, Fraction(25), A30_MIB)
    with pytest.raises(SharingRefused, match="above the device's memory"):
        device_sharing(MIGConfig(MPS(default_pinned_device_memory_limit=Quantity.parse("8Gi"))), None, 5952)


def test_a_device_not_shared_keeps_the_config_limits_or_none():
    assert device_sharing(GPUConfig(MPS()), None, A30_MIB) == MpsPlan()
    whole = device_sharing(GPUConfig(MPS(default_active_thread_percentage=50)), Fraction(100), A30_MIB)
    assert whole == MpsPlan(thread_percentage=50)


def test_time_slicing_carries_its_interval_and_no_config_means_no_sharing():
    long = device_sharing(GPUConfig(TimeSlicing(TimeSliceInterval.LONG)), Fraction(50), A30_MIB)
    assert long == TimeSlicePlan(TimeSliceInterval.LONG)
    assert device_sharing(None, Fraction(50), A30_MIB) is None
    assert device_sharing(GPUConfig(), Fraction(50), A30_MIB) is None
    assert device_sharing(VFIOConfig(), None, A30_MIB) is None


def test_shares_of_one_card_must_agree_on_strategy_and_interval():
    mps = entry("u1", share("s1", MpsPlan(25)))
    found = sharing_conflicts("u2", [share("s2", TimeSlicePlan(TimeSliceInterval.DEFAULT))], [mps])
    assert len(found) == 1
    assert "shared with MPS by claim ns/claim-u1 (u1)" in found[0]
    assert "TimeSlicing with interval Default" in found[0]
    # MPS limits may differ: each client carries its own.
    assert sharing_conflicts("u2", [share("s2", MpsPlan(75))], [mps]) == []
    long = entry("u3", share("s3", TimeSlicePlan(TimeSliceInterval.LONG)))
    assert sharing_conflicts("u2", [share("s2", TimeSlicePlan(TimeSliceInterval.SHORT))], [long])


def test_a_share_without_config_is_time_slicing_at_the_default_interval():
    plain = entry("u1", share("s1"))
    assert sharing_conflicts("u2", [share("s2", TimeSlicePlan(TimeSliceInterval.DEFAULT))], [plain]) == []
    assert sharing_conflicts("u2", [share("s2", TimeSlicePlan(TimeSliceInterval.LONG))], [plain])
    assert sharing_conflicts("u2", [share("s2", MpsPlan())], [plain])


def test_only_shares_of_the_same_card_meet_and_a_claim_never_conflicts_with_itself():
    mps = entry("u1", share("s1", MpsPlan()))
    other_card = replace(share("s2", TimeSlicePlan(TimeSliceInterval.LONG)), card="0000:31:00.0")
    assert sharing_conflicts("u2", [other_card], [mps]) == []
    assert sharing_conflicts("u1", [share("s2", TimeSlicePlan(TimeSliceInterval.LONG))], [mps]) == []
    mig = replace(share("", MpsPlan()), kind="MIG", share_id=None, device="gpu-0000-17-00-0-mig-1g-6gb-0")
    assert sharing_conflicts("u2", [mig], [entry("u3", share("s3", TimeSlicePlan()))]) == []


def test_each_card_is_given_the_setting_its_own_shares_ask_for():
    other = "0000:31:00.0"
    entries = [
        entry("u1", share("s1", TimeSlicePlan(TimeSliceInterval.LONG))),
        entry("u2", replace(share("s2", MpsPlan()), card=other)),
        entry("u3", replace(share("", MpsPlan()), kind="MIG", share_id=None, card="0000:4b:00.0")),
        entry("u4", replace(share("s4", None), card="0000:ca:00.0")),  # no sharing config: the card's own
    ]
    assert card_settings(entries) == {CARD: {"timeSlice": "Long"}, other: {"computeMode": "ExclusiveProcess"}}


def test_memory_a_share_asked_for_is_its_mps_memory_limit():
    result = {"shareID": "s1", "consumedCapacity": {"sharePercent": "25", "memory": "4Gi"}}
    assert asked_memory_mib(result) == 4096
    assert asked_memory_mib({"shareID": "s1", "consumedCapacity": {"memory": "0"}}) is None  # the default
    assert asked_memory_mib({"consumedCapacity": {"memory": "4Gi"}}) is None  # not a share
    with pytest.raises(SharingRefused, match=r"consumedCapacity\.memory 'lots' is not a quantity"):
        asked_memory_mib({"shareID": "s1", "consumedCapacity": {"memory": "lots"}})
    sharing = device_sharing(GPUConfig(MPS()), Fraction(25), A30_MIB, 4096)
    assert sharing == MpsPlan(thread_percentage=25, memory_limit_mib=4096)
    whole = device_sharing(GPUConfig(MPS()), Fraction(100), A30_MIB, 4096)
    assert whole == MpsPlan(memory_limit_mib=4096)
    config = GPUConfig(MPS(default_pinned_device_memory_limit=Quantity.parse("6Gi")))
    with pytest.raises(SharingRefused, match=r"6144Mi is above the memory the claim asked for \(4096Mi\)"):
        device_sharing(config, Fraction(50), A30_MIB, 4096)
