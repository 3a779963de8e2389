# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""RealMig over the real nvidia-ml-py bindings and a stand-in libnvidia-ml.so (tests/support/fake_pynvml.py).

The stand-in A30 answers the MIG calls with the driver's rules and return codes; what it cannot tell
is whether a real driver words its refusals the same way, which only hardware shows.
"""

from __future__ import annotations

import pytest

from deckhouse_gpu.adapters.nvml.nvml_mig import NO_COMPUTE_INSTANCE, RealMig, code_name
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigControl, MigError, MigModePending
from tests.support import fake_pynvml
from tests.support.fake_pynvml import (
    DRIVER_NOT_LOADED,
    IN_USE,
    INSUFFICIENT_RESOURCES,
    NO_PERMISSION,
    RESET_REQUIRED,
    Card,
    FakeLibrary,
    GpuInstance,
    mig_uuid,
    real_nvml,
)

fresh_bindings = fake_pynvml.fresh_bindings  # autouse: clean bindings for every test
A30 = "0000:17:00.0"
ONE_G, TWO_G, FOUR_G, ONE_G_ME = 14, 5, 0, 21  # the stand-in A30's profile ids


def control(card: Card | None = None, **options: tuple[str, ...]) -> tuple[FakeLibrary, Card, RealMig]:
    # One per test: pynvml keeps the first library it opens for the rest of the process.
    card = card or Card(mig=(1, 1))
    library = FakeLibrary(card, **options)  # type: ignore[arg-type]
    return library, card, RealMig(real_nvml(library))


def test_it_is_the_mig_port_and_shares_the_nvml_initialisation():
    library, _, mig = control()
    port: MigControl = mig
    assert port.mig_enabled(A30)
    assert mig.nvml.snapshot(A30).mig_current_enabled
    assert library.calls["nvmlInitWithFlags"] == 1


@pytest.mark.parametrize(
    ("mode", "enabled"), [((1, 1), True), ((0, 1), False), ((1, 0), True), (None, False)]
)
def test_mig_enabled_is_the_current_mode(mode, enabled):
    assert control(Card(mig=mode))[2].mig_enabled(A30) is enabled


def test_enabling_an_idle_card_applies_at_once():
    library, card, mig = control(Card(mig=(0, 0)))
    mig.set_mig_mode(A30, True)
    assert card.mig == (1, 1)
    assert mig.nvml.snapshot(A30).mig_current_enabled
    mig.set_mig_mode(A30, True)
    assert library.calls["nvmlDeviceSetMigMode"] == 1  # already enabled: no second call


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (RESET_REQUIRED, r"enable is pending: GPU requires restart .*\[NVML_ERROR_RESET_REQUIRED\]; .*reset"),
        (IN_USE, r"enable is pending: .*\[NVML_ERROR_IN_USE\]; .*stop the processes on the card"),
    ],
)
def test_an_activation_the_driver_cannot_do_leaves_the_mode_pending(status, expected):
    _, card, mig = control(Card(mig=(0, 0), activation=status))
    with pytest.raises(MigModePending, match=expected):
        mig.set_mig_mode(A30, True)
    assert card.mig == (0, 1)


def test_a_refused_mode_switch_is_a_mig_error():
    _, card, mig = control(Card(mig=(0, 0), fail={"nvmlDeviceSetMigMode": NO_PERMISSION}))
    with pytest.raises(
        MigError, match=r"^0000:17:00\.0: nvmlDeviceSetMigMode failed: .*NO_PERMISSION.*privileged"
    ):
        mig.set_mig_mode(A30, True)
    card.fail.clear()
    card.mig = None
    with pytest.raises(MigError, match=r"NVML_ERROR_NOT_SUPPORTED.*has no MIG"):
        mig.set_mig_mode(A30, True)


def test_disabling_with_instances_is_in_use():
    _, card, mig = control()
    mig.create_instance(A30, ONE_G, 0)
    with pytest.raises(MigError, match=r"nvmlDeviceSetMigMode failed: .*\[NVML_ERROR_IN_USE\]"):
        mig.set_mig_mode(A30, False)
    assert card.mig == (1, 1)


@pytest.mark.parametrize(
    ("card", "busy"),
    [
        (Card(), False),
        (Card(compute_pids=[4242]), True),
        (Card(graphics_pids=[77]), True),
        (Card(graphics_pids=[]), False),
    ],
)
def test_a_card_is_busy_while_processes_run(card, busy):
    assert control(card)[2].card_busy(A30) is busy


def test_busy_falls_back_to_the_v2_query_on_older_drivers():
    missing = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3")
    library, _, mig = control(Card(compute_pids=[1, 2, 3]), missing=missing)
    assert mig.card_busy(A30)
    assert library.calls["nvmlDeviceGetComputeRunningProcesses_v2"] == 2  # count, then the array


def test_create_makes_a_gpu_instance_at_the_placement_and_a_full_compute_instance():
    _, card, mig = control()
    made = mig.create_instance(A30, TWO_G, 2)
    assert made == MigInstance(A30, 1, 0, TWO_G, 2, 2, mig_uuid(card, 1, 0))
    assert made.uuid.startswith("MIG-")
    assert card.gpu_instances[1].compute == {0: (1, 1)}  # compute profile 2_SLICE for a 2g instance
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    whole = mig.create_instance(A30, FOUR_G, 0)
    assert (whole.placement_size, card.gpu_instances[whole.gpu_instance_id].compute) == (4, {0: (3, 2)})


def test_the_uuid_is_the_mig_device_with_the_created_ids():
    _, card, mig = control()
    first, second, third = (mig.create_instance(A30, ONE_G, start) for start in range(3))
    mig.destroy_instance(A30, second.gpu_instance_id, second.compute_instance_id)
    again = mig.create_instance(A30, ONE_G, 1)  # fills the MIG device slot the second one left
    assert again.uuid == mig_uuid(card, again.gpu_instance_id, 0)
    assert len({first.uuid, second.uuid, third.uuid, again.uuid}) == 4
    assert card.mig_slots[:3] == [(1, 0), (2, 0), (3, 0)]


def test_an_occupied_placement_is_insufficient_resources():
    _, _, mig = control()
    mig.create_instance(A30, TWO_G, 0)
    with pytest.raises(MigError) as failure:
        mig.create_instance(A30, ONE_G, 1)
    text = str(failure.value)
    assert text.startswith(f"{A30}: nvmlDeviceCreateGpuInstanceWithPlacement failed: ")
    assert "[NVML_ERROR_INSUFFICIENT_RESOURCES]; the placement overlaps an existing MIG instance" in text


def test_a_placement_the_profile_lacks_is_refused_before_nvml():
    library, _, mig = control()
    with pytest.raises(
        MigError, match=r"1 is not a placement of 2g\.12gb \(profile 5\); its starts are 0, 2"
    ):
        mig.create_instance(A30, TWO_G, 1)
    with pytest.raises(MigError, match="the card has no GPU instance profile 99"):
        mig.create_instance(A30, 99, 0)
    assert library.calls["nvmlDeviceCreateGpuInstanceWithPlacement"] == 0


def test_create_needs_mig_mode():
    with pytest.raises(MigError, match="MIG mode is not enabled on the card; enable it first"):
        control(Card(mig=(0, 1)))[2].create_instance(A30, ONE_G, 0)


@pytest.mark.parametrize(
    ("failing", "query"),
    [
        ("nvmlGpuInstanceCreateComputeInstance", "nvmlGpuInstanceCreateComputeInstance"),
        ("nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceGetInfo"),  # pynvml's name for it
        ("nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMaxMigDeviceCount"),
    ],
)
def test_a_failed_create_leaves_nothing_behind(failing, query):
    _, card, mig = control(Card(mig=(1, 1), fail={failing: INSUFFICIENT_RESOURCES}))
    with pytest.raises(MigError, match=f"{query} failed"):
        mig.create_instance(A30, ONE_G_ME, 3)
    assert card.gpu_instances == {}
    assert card.mig_slots == [None] * 7


def test_the_compute_profile_query_falls_back_to_v1():
    library, card, mig = control(missing=("nvmlGpuInstanceGetComputeInstanceProfileInfoV",))
    mig.create_instance(A30, FOUR_G, 0)
    assert card.gpu_instances[1].compute == {0: (3, 1)}  # 4_SLICE
    assert library.calls["nvmlGpuInstanceGetComputeInstanceProfileInfo"] == 4


def test_instances_lists_every_profile_and_a_gpu_instance_without_compute():
    _, card, mig = control()
    made = [mig.create_instance(A30, TWO_G, 2), mig.create_instance(A30, ONE_G, 0)]
    card.gpu_instances[5] = GpuInstance(5, card.profiles[0], 1)  # a prepare that died between the creates
    listed = mig.instances(A30)
    assert listed == [*made, MigInstance(A30, 5, NO_COMPUTE_INSTANCE, ONE_G, 1, 1, "")]
    mig.destroy_instance(A30, 5, NO_COMPUTE_INSTANCE)
    assert mig.instances(A30) == made
    card.mig = (0, 0)
    assert mig.instances(A30) == []


def test_destroy_removes_compute_then_gpu_instance_and_is_idempotent():
    library, card, mig = control()
    made = mig.create_instance(A30, ONE_G, 0)
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    assert card.gpu_instances == {}
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    mig.destroy_instance(A30, 9, 0)
    assert library.calls["nvmlComputeInstanceDestroy"] == library.calls["nvmlGpuInstanceDestroy"] == 1
    card.mig = (0, 0)
    mig.destroy_instance(A30, 1, 0)  # MIG off: GetGpuInstanceById answers NOT_SUPPORTED, nothing exists


def test_a_compute_instance_already_gone_still_lets_the_gpu_instance_go():
    _, card, mig = control()
    made = mig.create_instance(A30, ONE_G, 0)
    card.gpu_instances[made.gpu_instance_id].compute.clear()
    card.mig_slots = [None] * 7
    mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    assert card.gpu_instances == {}


def test_a_busy_instance_is_not_destroyed():
    _, card, mig = control()
    made = mig.create_instance(A30, ONE_G, 0)
    card.fail["nvmlComputeInstanceDestroy"] = IN_USE
    with pytest.raises(
        MigError, match=r"nvmlComputeInstanceDestroy failed: .*IN_USE\]; .*stop the processes"
    ):
        mig.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id)
    assert mig.instances(A30) == [made]


def test_a_library_wide_failure_is_a_mig_error_and_initialises_again():
    library, card, mig = control()
    card.fail["nvmlDeviceGetMigMode"] = DRIVER_NOT_LOADED
    with pytest.raises(
        MigError, match=r"^0000:17:00\.0: nvmlDeviceGetMigMode failed: .*kernel module is not loaded"
    ):
        mig.mig_enabled(A30)
    card.fail.clear()
    assert mig.mig_enabled(A30)
    assert library.calls["nvmlInitWithFlags"] == 2


def test_an_unknown_card_is_a_mig_error():
    with pytest.raises(MigError, match=r"0000:99:00\.0: NVML knows no device"):
        control()[2].instances("0000:99:00.0")


def test_return_codes_are_named():
    import pynvml  # noqa: PLC0415

    assert code_name(pynvml, IN_USE) == "NVML_ERROR_IN_USE"
    assert code_name(pynvml, 12345) == "NVML return code 12345"
