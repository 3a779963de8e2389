# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Crash safety of the MIG mode switches: gpu-handler SIGKILLed around each one, then restarted.

The claim is MIXED of tests/e2e/crash_node.py (two MIG instances on card A, which is off, and all
of card B), but card B was left in MIG mode by hand: the prepare switches A on for the instances
and B off for the whole card, each recorded before it is made (step switch-mig-mode). After a kill
a fresh process runs ``start()`` and then either the kubelet's retry of the prepare or, the Pod
being gone, its unprepare. A prepare that never finished gives each card back the mode it found;
one that finished leaves B off, as a whole card needs it, when it is unprepared.
"""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.simulator.host.driver_tree import write
from tests.e2e import crash_node
from tests.e2e.crash_node import (
    MIXED,
    assert_card_b,
    assert_prepared_once,
    assert_released,
    leave_in_mig_mode,
    switches,
)
from tests.e2e.sim_node import CARD_A, CARD_B, checkpoint_claims, ref

# One fake API server for this module, a host root of its own for each test (bound here for pytest).
server, node = crash_node.server, crash_node.node

# What a kill leaves (crash_node.switches): the entry's state, the cards it recorded switching MIG
# on and off, the MIG modes of A and B, the instances on A, a CDI spec.
Left = tuple[str | None, list[str], list[str], bool, bool, int, bool]
NOTHING: Left = (None, [], [], False, True, 0, False)
STARTED: Left = ("PrepareStarted", [], [], False, True, 0, False)
A_ON: Left = ("PrepareStarted", [CARD_A], [], True, True, 0, False)
B_OFF: Left = ("PrepareStarted", [CARD_A], [CARD_B], True, False, 0, False)
# The points of one prepare, in order: saves and MIG changes counted within the call.
POINTS: dict[str, Left] = {
    "step:invariant-guard": NOTHING,
    "save:1": STARTED,  # mark-started
    "step:mark-started": STARTED,
    "save:2": ("PrepareStarted", [CARD_A], [], False, True, 0, False),  # the intent to switch A on
    "mig:1": A_ON,  # A switched on, nothing else yet
    "save:3": ("PrepareStarted", [CARD_A], [CARD_B], True, True, 0, False),  # the intent to switch B off
    "mig:2": B_OFF,  # B switched off
    "step:switch-mig-mode": B_OFF,
    "step:create-mig": ("PrepareStarted", [CARD_A], [CARD_B], True, False, 2, False),
    "step:write-cdi": ("PrepareStarted", [CARD_A], [CARD_B], True, False, 2, True),
    "step:mark-completed": ("PrepareCompleted", [CARD_A], [CARD_B], True, False, 2, True),
}
# Where the rollback of the entry left at mig:2 can die: after A goes off, after B goes on again.
ROLLBACK_POINTS: dict[str, Left] = {
    "mig:1": ("PrepareStarted", [CARD_A], [CARD_B], False, False, 0, False),
    "mig:2": ("PrepareStarted", [CARD_A], [CARD_B], False, True, 0, False),
    "save:1": NOTHING,
}


def killed_at(node, point: str) -> tuple[dict[str, Any], str]:
    """MIXED on a node with B in MIG mode, its prepare killed at ``point``; the claim and its UID."""
    claim = node.claim(*MIXED)
    leave_in_mig_mode(node.root, CARD_B)
    dying = node.launch("--trap-in", "prepare", "--trap-at", point)
    assert dying.call("prepare", ref(claim)) is None
    assert dying.killed(), dying.stderr()
    return claim, ref(claim).uid


@pytest.mark.parametrize(("point", "left"), list(POINTS.items()), ids=list(POINTS))
def test_a_prepare_killed_around_a_mode_switch_is_prepared_once_on_the_retry(node, point, left):
    claim, uid = killed_at(node, point)
    assert switches(node, uid) == left  # the crash came where it was meant to

    fresh = node.launch()
    assert fresh.call("start") == "started"
    answer = fresh.call("prepare", ref(claim))
    assert_prepared_once(node, claim, answer)  # A on with the two instances, B off
    entry = checkpoint_claims(node.root)[uid]
    assert (entry["migEnabledCards"], entry["migDisabledCards"]) == ([CARD_A], [CARD_B])

    assert fresh.call("unprepare", ref(claim)) == {uid: ""}
    assert_released(node)  # A off again: the claim switched it on
    assert_card_b(node, mig_mode=False)  # B stays off: a prepared whole card is left as it needs


@pytest.mark.parametrize(("point", "left"), list(POINTS.items()), ids=list(POINTS))
def test_a_prepare_killed_around_a_mode_switch_gives_the_modes_back_when_unprepared(node, point, left):
    claim, uid = killed_at(node, point)
    assert switches(node, uid) == left

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert fresh.call("unprepare", ref(claim)) == {uid: ""}  # the Pod is gone
    assert_released(node)
    # An unfinished prepare gives B back the MIG mode it found; a finished one leaves it off.
    assert_card_b(node, mig_mode=left[0] != "PrepareCompleted")
    assert fresh.call("unprepare", ref(claim)) == {uid: ""}  # and once more: a no-op
    assert_released(node)


@pytest.mark.parametrize(("point", "left"), list(ROLLBACK_POINTS.items()), ids=list(ROLLBACK_POINTS))
def test_a_rollback_killed_while_it_gives_the_modes_back_finishes_after_a_restart(node, point, left):
    claim, uid = killed_at(node, "mig:2")
    rolling_back = node.launch("--trap-in", "unprepare", "--trap-at", point)
    assert rolling_back.call("unprepare", ref(claim)) is None
    assert rolling_back.killed(), rolling_back.stderr()
    assert switches(node, uid) == left

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert fresh.call("unprepare", ref(claim)) == {uid: ""}
    assert_released(node)
    assert_card_b(node, mig_mode=True)


def test_a_node_rebooted_after_the_switch_gives_the_card_its_mode_back_at_start(node):
    claim, uid = killed_at(node, "mig:2")  # B off, its intent recorded, when the node went down
    write(node.root / "proc/sys/kernel/random/boot_id", "0b00b00b-0000-4000-8000-000000000003\n")

    after = node.launch()
    assert after.call("start") == "started"  # the entry of the earlier boot is released
    assert_released(node)
    assert_card_b(node, mig_mode=True)
    answer = after.call("prepare", ref(claim))  # the kubelet prepares again for the restarted Pod
    assert_prepared_once(node, claim, answer)
    assert uid in checkpoint_claims(node.root)
