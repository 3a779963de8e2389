# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MIG mode switches in prepare, each recorded before it is made and given back by a rollback.

A whole card left in MIG mode is switched off for its claim, a card for MIG instances on: the
step switch-mig-mode saves the intent in the claim's entry first. A prepare that does not finish
(a failing step, a crash rolled back by the next call or by the start after a reboot) gives the
card back the mode it found; a whole-card claim that was prepared leaves the card off when it is
unprepared. The node is simulated as in test_prepare_service.py.
"""

import json
from typing import Any

import pytest

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.simulator.host.sim_mig import MigOp
from testkit.prepare_world import PrepareWorld, allocate, build_world

A30, A30B = "0000:17:00.0", "0000:31:00.0"
WHOLE_A, WHOLE_B = "gpu-0000-17-00-0", "gpu-0000-31-00-0"
MIG_B = "gpu-0000-31-00-0-mig-1g-6gb-0"


class Crash(BaseException):
    """A kill -9 at a step boundary: no undo runs and nothing after it (DESIGN.md D9)."""


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    built = build_world(tmp_path, {A30: "a30", A30B: "a30"})
    built.mig.set_mig_mode(A30, True)  # left in MIG mode by hand, with no instance
    return built


def ref(claim) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def entries(world) -> dict[str, Any]:
    return json.loads(world.checkpoint_path.read_text())["claims"] if world.checkpoint_path.exists() else {}


def pending(world, card: str) -> bool:
    with world.nvml.card_state(card) as state:
        return bool(state.mig_pending)


def crash_after(step: str):
    def after(name: str) -> None:
        if name == step:
            raise Crash(step)

    return after


def crashed_after_the_switch_off(world) -> dict[str, Any]:
    """A whole-card claim on A whose prepare died right after switching A off."""
    claim = allocate(world.api, "whole", WHOLE_A)
    with pytest.raises(Crash):
        world.service(after_step=crash_after("switch-mig-mode")).prepare([ref(claim)])
    entry = entries(world)[ref(claim).uid]
    assert (entry["state"], entry["migDisabledCards"]) == ("PrepareStarted", [A30])
    assert not world.mig.mig_enabled(A30)
    return claim


def test_a_whole_card_is_switched_off_with_the_intent_saved_and_left_off_after_unprepare(world):
    claim = allocate(world.api, "whole", WHOLE_A)
    service = world.service()
    assert service.prepare([ref(claim)])[ref(claim).uid].error == ""
    assert not world.mig.mig_enabled(A30)
    assert entries(world)[ref(claim).uid]["migDisabledCards"] == [A30]
    assert service.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    # Off is what a whole card needs, and a MIG claim switches it on when one comes.
    assert not world.mig.mig_enabled(A30)
    assert entries(world) == {}


def test_a_step_failing_after_the_switch_off_switches_mig_on_again(world):
    claim = allocate(world.api, "whole", WHOLE_A)
    (world.root / "host/proc/driver/nvidia/gpus" / A30 / "information").unlink()  # write-cdi fails
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert "information" in result.error
    assert world.mig.mig_enabled(A30)
    assert not list(world.cdi_root.glob("*_*.json"))
    assert entries(world) == {}


def test_a_failing_create_gives_back_both_modes_the_claim_changed(world):
    claim = allocate(world.api, "both", WHOLE_A, MIG_B)  # A switched off, B on, then B's create fails
    world.mig.inner.fail_next(A30B, MigOp.CREATE, "Insufficient Resources")
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert "cannot create" in result.error
    assert (world.mig.mig_enabled(A30), world.mig.mig_enabled(A30B)) == (True, False)
    assert world.mig.instances(A30B) == []
    assert entries(world) == {}


def test_the_rollback_of_a_leftover_entry_switches_mig_on_again_before_preparing(world):
    claim = crashed_after_the_switch_off(world)
    service = world.service()
    switched: list[tuple[str, bool]] = []
    set_mode = world.mig.set_mig_mode

    def recorded(card: str, enabled: bool) -> None:
        switched.append((card, enabled))
        set_mode(card, enabled)

    world.mig.set_mig_mode = recorded
    assert service.prepare([ref(claim)])[ref(claim).uid].error == ""  # the kubelet's retry
    assert switched == [(A30, True), (A30, False)]  # given back, then switched for the new attempt
    assert entries(world)[ref(claim).uid]["migDisabledCards"] == [A30]


def test_the_unprepare_of_a_leftover_entry_switches_mig_on_again(world):
    claim = crashed_after_the_switch_off(world)
    assert world.service().unprepare([ref(claim)]) == {ref(claim).uid: ""}  # the Pod is gone
    assert world.mig.mig_enabled(A30)
    assert entries(world) == {}


def test_the_start_after_a_node_crash_switches_mig_on_again(world):
    crashed_after_the_switch_off(world)
    world.reboot("another-boot-id")  # the node went down with the entry PrepareStarted
    world.service().start()
    assert world.mig.mig_enabled(A30)
    assert entries(world) == {}


def test_the_start_after_a_node_crash_leaves_a_prepared_whole_card_off(world):
    claim = allocate(world.api, "whole", WHOLE_A)
    assert world.service().prepare([ref(claim)])[ref(claim).uid].error == ""
    world.reboot("another-boot-id")
    world.service().start()
    assert not world.mig.mig_enabled(A30)
    assert entries(world) == {}


def test_a_card_another_claim_now_uses_whole_is_not_switched_back(world):
    first = allocate(world.api, "first", WHOLE_A, shares=("s-1",))
    with pytest.raises(Crash):
        world.service(after_step=crash_after("switch-mig-mode")).prepare([ref(first)])
    second = allocate(world.api, "second", WHOLE_A, shares=("s-2",))
    service = world.service()
    assert service.prepare([ref(second)])[ref(second).uid].error == ""  # finds A off: no switch
    assert entries(world)[ref(second).uid]["migDisabledCards"] == []
    assert service.unprepare([ref(first)]) == {ref(first).uid: ""}
    assert not world.mig.mig_enabled(A30)  # the second claim's Pod uses the card whole


def test_a_busy_card_is_left_off_and_the_rollback_still_finishes(world):
    claim = crashed_after_the_switch_off(world)
    world.nvml.set_busy(A30)
    assert world.service().unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert (world.mig.mig_enabled(A30), pending(world, A30)) == (False, False)
    assert entries(world) == {}


def test_a_switch_back_that_would_wait_for_a_reset_is_cancelled(world, monkeypatch):
    claim = crashed_after_the_switch_off(world)
    world.nvml.set_busy(A30)  # the switch stays pending (MigModePending) ...
    monkeypatch.setattr(world.mig, "card_busy", lambda card: False)  # ... though none was seen before
    assert world.service().unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert (world.mig.mig_enabled(A30), pending(world, A30)) == (False, False)  # no switch at the next reset


def test_a_switch_off_that_waits_for_a_reset_fails_and_is_kept_for_the_reset(world):
    claim = allocate(world.api, "whole", WHOLE_A)
    world.nvml.set_busy(A30)
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert result.error.startswith(f"switching MIG off on card {A30} waits for a GPU reset:")
    assert entries(world) == {}
    # Still on, the switch off pending: a reset applies it, as a pending switch on (docs/PREPARE.md).
    assert (world.mig.mig_enabled(A30), pending(world, A30)) == (True, False)
    world.nvml.set_busy(A30, False)
    world.nvml.reset(A30)  # the operator resets the card: it comes up off
    assert world.service().prepare([ref(claim)])[ref(claim).uid].error == ""
    assert entries(world)[ref(claim).uid]["migDisabledCards"] == []  # the switch was not the handler's
