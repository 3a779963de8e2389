# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulated MIG state on disk: what one process leaves, the next one finds, as on a real GPU."""

import json
import threading

import pytest

from deckhouse_gpu.ports.mig import MigControl, MigError, MigModePending
from deckhouse_gpu.simulator.host.driver_tree import write
from deckhouse_gpu.simulator.host.sim_mig import MigOp
from deckhouse_gpu.simulator.host.sim_mig_state import BOOT_ID_FILE, STATE_FILE, PersistentSimMig
from deckhouse_gpu.simulator.host.sim_nvml import SimCard, SimulatedNVML

A30, A100, T4 = "0000:17:00.0", "0000:31:00.0", "0000:b3:00.0"
ONE_G_A30, ONE_G_A100, TWO_G_A30 = 14, 19, 5


def process(root, cards=None) -> PersistentSimMig:
    """What one handler process has: its own SimulatedNVML over the same host root."""
    nvml = SimulatedNVML(cards or {A30: "a30", A100: "a100-40gb", T4: "t4"}, node_name="n1")
    return PersistentSimMig.under(nvml, root)


@pytest.fixture
def root(tmp_path):
    write(tmp_path / BOOT_ID_FILE, "boot-1\n")
    return tmp_path


def test_it_is_the_mig_port_and_a_fresh_host_has_the_configured_cards(root):
    port: MigControl = process(root)
    assert not port.mig_enabled(A30)
    assert port.instances(A30) == []
    assert not (root / STATE_FILE).exists()  # nothing changed, nothing written


def test_mode_and_instances_survive_the_process(root):
    first = process(root)
    first.set_mig_mode(A30, True)
    made = [first.create_instance(A30, ONE_G_A30, start) for start in (0, 1)]
    second = process(root)
    assert second.mig_enabled(A30)
    assert second.instances(A30) == made
    second.destroy_instance(A30, made[0].gpu_instance_id, 0)
    assert process(root).instances(A30) == [made[1]]
    # GPU instance 1 again, but a new UUID: the creation count survived too, as on hardware.
    again = process(root).create_instance(A30, ONE_G_A30, 0)
    assert again.gpu_instance_id == made[0].gpu_instance_id
    assert again.uuid not in {m.uuid for m in made}


def test_load_shows_the_capabilities_side_the_mode_in_the_file(root):
    process(root).set_mig_mode(A30, True)
    restarted = process(root)
    assert restarted.nvml.snapshot(A30).mig_current_enabled is False  # as configured, until loaded
    restarted.load()
    assert restarted.nvml.snapshot(A30).mig_current_enabled is True


def test_a_pending_mode_is_kept_and_a_reboot_applies_it_and_drops_instances(root):
    first = process(root)
    first.set_mig_mode(A100, True)
    first.create_instance(A100, ONE_G_A100, 0)
    first.nvml.set_busy(A30)
    with pytest.raises(MigModePending):
        first.set_mig_mode(A30, True)
    assert process(root).nvml.snapshot(A30).mig_pending_enabled is False  # not loaded yet
    second = process(root)
    second.load()
    snapshot = second.nvml.snapshot(A30)
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (False, True)
    write(root / BOOT_ID_FILE, "boot-2\n")
    after = process(root)
    assert after.mig_enabled(A30)  # the reset of the reboot applied it
    assert after.mig_enabled(A100)  # MIG mode persists across a reboot
    assert after.instances(A100) == []  # instances do not
    after.create_instance(A100, ONE_G_A100, 0)
    assert json.loads((root / STATE_FILE).read_text())["bootID"] == "boot-2"
    assert len(process(root).instances(A100)) == 1


def test_another_card_in_the_slot_starts_afresh(root):
    process(root).set_mig_mode(A30, True)
    swapped = process(root, {A30: SimCard("a30", uuid="GPU-another"), A100: "a100-40gb"})
    assert not swapped.mig_enabled(A30)


def test_refusals_and_injected_failures_still_apply_and_change_nothing(root):
    first = process(root)
    with pytest.raises(MigError, match="MIG mode is not enabled"):
        first.create_instance(A30, ONE_G_A30, 0)
    first.set_mig_mode(A30, True)
    first.fail_next(A30, MigOp.CREATE, "Unknown Error")
    with pytest.raises(MigError, match="Unknown Error"):
        first.create_instance(A30, TWO_G_A30, 0)
    assert process(root).instances(A30) == []
    first.nvml.fail_device(A100)  # a lost card does not stop the others' state being saved
    first.create_instance(A30, TWO_G_A30, 0)
    assert len(process(root).instances(A30)) == 1
    assert not list((root / STATE_FILE).parent.glob(".*.tmp"))


def test_an_unreadable_file_is_an_error_naming_it(root):
    (root / STATE_FILE).parent.mkdir(parents=True)
    (root / STATE_FILE).write_text("{not json")
    with pytest.raises(MigError, match=r"mig-state\.json is unreadable .*remove it"):
        process(root).mig_enabled(A30)
    (root / STATE_FILE).write_text('{"version": 1, "cards": {"0000:17:00.0": {"model": "a30"}}}')
    with pytest.raises(MigError, match="bad content"):
        process(root).load()


def test_two_processes_never_lose_each_others_instances(root):
    process(root).set_mig_mode(A100, True)
    workers = [process(root), process(root)]
    errors: list[Exception] = []

    def create(mig: PersistentSimMig, starts: range) -> None:
        try:
            for start in starts:
                mig.create_instance(A100, ONE_G_A100, start)
        except Exception as error:  # reported by the assertion below
            errors.append(error)

    threads = [
        threading.Thread(target=create, args=(workers[0], range(0, 7, 2))),
        threading.Thread(target=create, args=(workers[1], range(1, 7, 2))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    instances = process(root).instances(A100)
    assert sorted(i.placement_start for i in instances) == list(range(7))
    assert len({i.gpu_instance_id for i in instances}) == 7
