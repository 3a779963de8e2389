# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulated MIG control: the driver's rules over the A30, A100 and H100 geometries of the data files."""

import re

import pytest

from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigControl, MigError, MigModePending
from deckhouse_gpu.simulator.host.nvml_data import load_model
from deckhouse_gpu.simulator.host.sim_mig import MigOp, SimulatedMig
from deckhouse_gpu.simulator.host.sim_nvml import SimCard, SimNVMLConfigError, SimulatedNVML

A30, A100, H100, T4 = "0000:17:00.0", "0000:31:00.0", "0000:65:00.0", "0000:b3:00.0"
MIG_UUID = re.compile(r"^MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def profile_id(model: str, name: str) -> int:
    mig = load_model(model).mig
    assert mig is not None
    return next(p.profile_id for p in mig.profiles if p.name == name)


@pytest.fixture
def nvml() -> SimulatedNVML:
    cards: dict[str, str | SimCard] = {
        A30: SimCard("a30", mig_current=True),
        A100: SimCard("a100-40gb", mig_current=True),
        H100: SimCard("h100-80gb", mig_current=True),
        T4: "t4",
    }
    return SimulatedNVML(cards, node_name="node-1")


@pytest.fixture
def mig(nvml: SimulatedNVML) -> SimulatedMig:
    return SimulatedMig(nvml)


def test_it_is_the_mig_port(mig):
    port: MigControl = mig
    assert port.mig_enabled(A30)
    assert not port.mig_enabled(T4)
    assert port.instances(A30) == []


def test_a100_takes_seven_1g_instances_and_nothing_after(mig):
    one_g = profile_id("a100-40gb", "1g.5gb")
    made = [mig.create_instance(A100, one_g, start) for start in range(7)]
    assert [i.gpu_instance_id for i in made] == [1, 2, 3, 4, 5, 6, 7]
    assert {i.compute_instance_id for i in made} == {0}
    assert all(MIG_UUID.match(i.uuid) for i in made)
    assert len({i.uuid for i in made}) == 7
    assert mig.instances(A100) == made
    # Memory slice 7 is still free, but no profile has a placement there alone.
    with pytest.raises(MigError, match=r"INSUFFICIENT_RESOURCES.*overlap GPU instance 7"):
        mig.create_instance(A100, profile_id("a100-40gb", "1g.10gb"), 6)
    with pytest.raises(MigError, match="INSUFFICIENT_RESOURCES"):
        mig.create_instance(A100, profile_id("a100-40gb", "1g.5gb+me"), 0)


def test_a_1g_after_a_7g_overlaps(mig):
    whole = mig.create_instance(A100, profile_id("a100-40gb", "7g.40gb"), 0)
    assert (whole.placement_start, whole.placement_size) == (0, 8)
    with pytest.raises(MigError) as failure:
        mig.create_instance(A100, profile_id("a100-40gb", "1g.5gb"), 3)
    text = str(failure.value)
    assert text.startswith(f"{A100}: nvmlDeviceCreateGpuInstanceWithPlacement failed: Insufficient Resources")
    assert "NVML_ERROR_INSUFFICIENT_RESOURCES" in text
    assert "overlap GPU instance 1 (7g.40gb at 0:8)" in text
    assert mig.instances(A100) == [whole]


def test_placements_must_be_the_profiles_own(mig):
    with pytest.raises(MigError, match=r"Invalid Argument \(NVML_ERROR_INVALID_ARGUMENT\).*starts are 0, 4"):
        mig.create_instance(A100, profile_id("a100-40gb", "3g.20gb"), 2)
    with pytest.raises(MigError, match=r"INVALID_ARGUMENT.*no GPU instance profile 99 on NVIDIA A100"):
        mig.create_instance(A100, 99, 0)


def test_instances_beside_each_other_fit_until_memory_runs_out(mig):
    three = mig.create_instance(A100, profile_id("a100-40gb", "3g.20gb"), 4)
    two = mig.create_instance(A100, profile_id("a100-40gb", "2g.10gb"), 0)
    one = mig.create_instance(A100, profile_id("a100-40gb", "1g.10gb"), 2)
    assert [(i.placement_start, i.placement_size) for i in (three, two, one)] == [(4, 4), (0, 2), (2, 2)]
    with pytest.raises(MigError, match="overlap GPU instance 3"):
        mig.create_instance(A100, profile_id("a100-40gb", "1g.5gb"), 3)


def test_only_one_media_extension_instance(mig):
    plus_me = profile_id("a100-40gb", "1g.5gb+me")
    mig.create_instance(A100, plus_me, 0)
    with pytest.raises(MigError, match=r"INSUFFICIENT_RESOURCES.*at most 1 1g\.5gb\+me"):
        mig.create_instance(A100, plus_me, 1)
    # A30: the two +me profiles share the card's one JPEG and one OFA engine.
    mig.create_instance(A30, profile_id("a30", "1g.6gb+me"), 0)
    with pytest.raises(MigError, match=r"2g\.12gb\+me needs 1 (JPEG|OFA) engine\(s\), 0 are free"):
        mig.create_instance(A30, profile_id("a30", "2g.12gb+me"), 2)
    assert mig.create_instance(A30, profile_id("a30", "2g.12gb"), 2).placement_size == 2


def test_h100_full_configurations_fit(mig):
    seven = [mig.create_instance(H100, profile_id("h100-80gb", "1g.10gb"), start) for start in range(6)]
    seven.append(mig.create_instance(H100, profile_id("h100-80gb", "1g.10gb+me"), 6))
    assert len(mig.instances(H100)) == 7
    for instance in seven:
        mig.destroy_instance(H100, instance.gpu_instance_id, instance.compute_instance_id)
    big = mig.create_instance(H100, profile_id("h100-80gb", "4g.40gb"), 0)
    small = mig.create_instance(H100, profile_id("h100-80gb", "3g.40gb"), 4)
    assert {big.gpu_instance_id, small.gpu_instance_id} == {1, 2}


def test_a30_four_1g_instances(mig):
    made = [mig.create_instance(A30, profile_id("a30", "1g.6gb"), start) for start in range(4)]
    assert [i.placement_start for i in made] == [0, 1, 2, 3]
    with pytest.raises(MigError, match="INSUFFICIENT_RESOURCES"):
        mig.create_instance(A30, profile_id("a30", "4g.24gb"), 0)


def test_ids_are_reused_but_uuids_are_new(mig):
    one_g = profile_id("a30", "1g.6gb")
    first = mig.create_instance(A30, one_g, 0)
    second = mig.create_instance(A30, one_g, 1)
    mig.destroy_instance(A30, first.gpu_instance_id, first.compute_instance_id)
    again = mig.create_instance(A30, one_g, 0)
    assert again.gpu_instance_id == first.gpu_instance_id == 1
    assert again.uuid not in (first.uuid, second.uuid)


def test_uuids_are_deterministic():
    def run() -> list[str]:
        mig = SimulatedMig(SimulatedNVML({A30: SimCard("a30", mig_current=True)}, node_name="n"))
        return [mig.create_instance(A30, profile_id("a30", "1g.6gb"), start).uuid for start in range(2)]

    assert run() == run()


def test_destroy_is_idempotent(mig):
    made = mig.create_instance(A30, profile_id("a30", "2g.12gb"), 0)
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    mig.destroy_instance(A30, 42, 0)
    assert mig.instances(A30) == []


def test_destroying_with_the_wrong_compute_instance_leaves_the_gpu_instance(mig):
    made = mig.create_instance(A30, profile_id("a30", "2g.12gb"), 0)
    with pytest.raises(MigError, match=r"IN_USE.*still holds compute instance 0"):
        mig.destroy_instance(A30, made.gpu_instance_id, 3)
    assert mig.instances(A30) == [made]


def test_creating_needs_mig_mode(nvml, mig):
    nvml.set_mig_mode(A30, current=False, pending=False)
    with pytest.raises(
        MigError, match=r"Not Supported \(NVML_ERROR_NOT_SUPPORTED\): MIG mode is not enabled"
    ):
        mig.create_instance(A30, profile_id("a30", "1g.6gb"), 0)
    with pytest.raises(MigError, match=r"NOT_SUPPORTED.*T4 has no MIG"):
        mig.set_mig_mode(T4, True)


def test_enabling_an_idle_card_takes_effect_at_once(nvml, mig):
    nvml.set_mig_mode(A30, current=False, pending=False)
    mig.set_mig_mode(A30, True)
    assert mig.mig_enabled(A30)
    snapshot = nvml.snapshot(A30)
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (True, True)
    mig.set_mig_mode(A30, True)  # already so: nothing changes
    mig.set_mig_mode(A30, False)
    assert (nvml.snapshot(A30).mig_current_enabled, nvml.snapshot(A30).mig_pending_enabled) == (False, False)


def test_enabling_a_busy_card_waits_for_a_reset(nvml, mig):
    nvml.set_mig_mode(A30, current=False, pending=False)
    nvml.set_busy(A30)
    assert mig.card_busy(A30)
    with pytest.raises(MigModePending, match=f"{A30}: MIG mode enable is pending: processes run on the card"):
        mig.set_mig_mode(A30, True)
    snapshot = nvml.snapshot(A30)
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (False, True)
    assert not mig.mig_enabled(A30)
    nvml.set_busy(A30, False)
    nvml.reset(A30)
    assert mig.mig_enabled(A30)
    assert not mig.card_busy(A30)


def test_disabling_with_instances_is_in_use(nvml, mig):
    made = mig.create_instance(A30, profile_id("a30", "4g.24gb"), 0)
    with pytest.raises(MigError, match=r"In use by another client \(NVML_ERROR_IN_USE\): 1 MIG instance"):
        mig.set_mig_mode(A30, False)
    assert nvml.snapshot(A30).mig_pending_enabled
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    mig.set_mig_mode(A30, False)
    assert not mig.mig_enabled(A30)


def test_a_reset_clears_the_instances(nvml, mig):
    mig.create_instance(A30, profile_id("a30", "1g.6gb"), 0)
    nvml.reset(A30)
    assert mig.instances(A30) == []


def test_injected_failures_change_nothing_and_pass(mig):
    one_g = profile_id("a30", "1g.6gb")
    mig.fail_next(A30, MigOp.CREATE, "Insufficient Resources")
    with pytest.raises(
        MigError, match=f"{A30}: nvmlDeviceCreateGpuInstanceWithPlacement failed: Insufficient"
    ):
        mig.create_instance(A30, one_g, 0)
    assert mig.instances(A30) == []
    made = mig.create_instance(A30, one_g, 0)
    mig.fail_next(A30, MigOp.DESTROY, "In use by another client", times=2)
    for _ in range(2):
        with pytest.raises(MigError, match="nvmlGpuInstanceDestroy failed: In use by another client"):
            mig.destroy_instance(A30, made.gpu_instance_id, 0)
    assert mig.instances(A30) == [made]
    mig.fail_next(A30.upper(), MigOp.SET_MODE)
    with pytest.raises(MigError, match="nvmlDeviceSetMigMode failed: Unknown Error"):
        mig.set_mig_mode(A30, True)
    mig.fail_next(A30, MigOp.DESTROY)
    mig.clear_failures()
    mig.destroy_instance(A30, made.gpu_instance_id, 0)
    with pytest.raises(SimNVMLConfigError, match="unknown MIG operation"):
        mig.fail_next(A30, "nvmlDeviceReset")


def test_nvml_failures_are_mig_errors(nvml, mig):
    with pytest.raises(MigError, match=r"0000:99:00\.0: nvmlDeviceGetMigMode: .*knows no device"):
        mig.mig_enabled("0000:99:00.0")
    nvml.fail_device(A30)
    with pytest.raises(MigError, match="GPU is lost"):
        mig.instances(A30)
    nvml.fail_library()
    with pytest.raises(MigError, match=r"libnvidia-ml\.so\.1"):
        mig.card_busy(A100)


def test_instances_name_their_card_in_sysfs_form(mig):
    made = mig.create_instance(A30.upper(), profile_id("a30", "1g.6gb"), 1)
    assert made == MigInstance(A30, 1, 0, profile_id("a30", "1g.6gb"), 1, 1, made.uuid)


@pytest.mark.parametrize("model", ["a30", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb"])
def test_every_profile_fills_its_instance_count(model):
    # The engine and slice limits must never refuse what the profile table itself promises.
    mig_data = load_model(model).mig
    assert mig_data is not None
    for profile in mig_data.profiles:
        mig = SimulatedMig(SimulatedNVML({A30: SimCard(model, mig_current=True)}))
        free = [p.start for p in profile.placements]
        for _ in range(profile.instance_count):
            start = free.pop(0)
            made = mig.create_instance(A30, profile.profile_id, start)
            free = [s for s in free if s >= made.placement_start + made.placement_size]
        with pytest.raises(MigError, match="INSUFFICIENT_RESOURCES"):
            mig.create_instance(A30, profile.profile_id, profile.placements[-1].start)


def test_mig_mode_switched_off_underneath_drops_the_instances(nvml, mig):
    mig.create_instance(A30, profile_id("a30", "1g.6gb"), 0)
    nvml.set_mig_mode(A30, current=False)
    assert mig.instances(A30) == []
