# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Crash safety of prepare and unprepare: gpu-handler SIGKILLed at every point, then restarted.

Each test runs the handler's PrepareService, built as ``gpu-handler run`` builds it, in processes
of its own (tests/e2e/prepare_launcher.py) against one fake API server, on the node of
tests/e2e/crash_node.py. A process dies at a chosen point (no undo, no finally); a fresh one runs
``start()`` and the call again, as the kubelet retries a call that got no answer, and the node
must converge: the claim prepared exactly once, then nothing left. The simulated MIG state lives
in a file under the host root, so what a dead process created is still there for its successor,
as on a real GPU.
"""

from __future__ import annotations

import pytest

from deckhouse_gpu.services.prepare.prepare_steps import PREPARE_STEPS
from tests.e2e import crash_node
from tests.e2e.crash_node import MIXED, assert_prepared_once, assert_released, leftover, status_problems
from tests.e2e.sim_node import metadata_files, ref

# One fake API server for this module, a host root of its own for each test (bound here for pytest).
server, node = crash_node.server, crash_node.node

# What a kill leaves: (checkpoint state of the claim, MIG records in it, instances on card A,
# MIG mode of A, CDI spec written).
NOTHING = (None, 0, 0, False, False)
STARTED = ("PrepareStarted", 0, 0, False, False)
# Where a prepare of MIXED can die: every step boundary, after the intent to switch MIG on is
# saved and after the switch (switch-mig-mode), after each create (before its record) and record
# (create-mig). Card B is off already; test_prepare_crash_mig_mode.py has it left in MIG mode.
PREPARE_POINTS = {
    "step:short-circuit-completed": NOTHING,
    "step:roll-back-leftover": NOTHING,
    "step:plan": NOTHING,
    "step:check-config": NOTHING,
    "step:invariant-guard": NOTHING,
    "step:check-vfio": NOTHING,
    "step:mark-started": STARTED,
    "step:switch-mig-mode": ("PrepareStarted", 0, 0, True, False),
    "step:create-mig": ("PrepareStarted", 2, 2, True, False),
    # No VFIO in MIXED: this changes nothing (tests/e2e/test_prepare_crash_vfio.py has it).
    "step:bind-vfio": ("PrepareStarted", 2, 2, True, False),
    # No sharing in MIXED: these change nothing (tests/e2e/test_prepare_crash_sharing.py has them).
    "step:set-card-sharing": ("PrepareStarted", 2, 2, True, False),
    "step:start-mps": ("PrepareStarted", 2, 2, True, False),
    "step:write-device-metadata": ("PrepareStarted", 2, 2, True, False),  # files, no spec yet
    "step:write-vfio-payload": ("PrepareStarted", 2, 2, True, False),
    "step:write-cdi": ("PrepareStarted", 2, 2, True, True),  # its ids are saved by the next step
    "step:mark-completed": ("PrepareCompleted", 2, 2, True, True),
    "save:2": STARTED,  # with the intent to switch MIG on recorded
    "mig:1": ("PrepareStarted", 0, 0, True, False),
    "mig:2": ("PrepareStarted", 0, 1, True, False),  # an instance nobody recorded
    "save:3": ("PrepareStarted", 1, 1, True, False),
    "mig:3": ("PrepareStarted", 1, 2, True, False),
}
# Where its unprepare can die: after each destroy and each save of release(), after MIG goes off.
UNPREPARE_POINTS = {
    "mig:1": ("PrepareCompleted", 2, 1, True, True),
    "save:1": ("PrepareCompleted", 1, 1, True, True),
    "mig:2": ("PrepareCompleted", 1, 0, True, True),
    "save:2": ("PrepareCompleted", 0, 0, True, True),
    "mig:3": ("PrepareCompleted", 0, 0, False, True),
    "save:3": NOTHING,
}


def test_every_prepare_step_boundary_is_a_kill_point():
    assert {f"step:{step.name}" for step in PREPARE_STEPS} <= set(PREPARE_POINTS)


@pytest.mark.parametrize(("point", "left"), list(PREPARE_POINTS.items()), ids=list(PREPARE_POINTS))
def test_a_prepare_killed_anywhere_converges_after_a_restart(node, point, left):
    claim = node.claim(*MIXED)
    dying = node.launch("--trap-in", "prepare", "--trap-at", point)
    assert dying.call("prepare", ref(claim)) is None
    assert dying.killed(), dying.stderr()
    assert leftover(node, ref(claim).uid) == left  # the crash came where it was meant to

    fresh = node.launch()
    assert fresh.call("start") == "started"
    answer = fresh.call("prepare", ref(claim))
    assert_prepared_once(node, claim, answer)
    assert fresh.call("prepare", ref(claim)) == answer  # the kubelet's next retry changes nothing
    assert_prepared_once(node, claim, answer)
    problems = status_problems(node, claim, prepared=True)

    assert fresh.call("unprepare", ref(claim)) == {ref(claim).uid: ""}
    assert_released(node)
    problems += status_problems(node, claim, prepared=False)
    assert not problems


def test_a_kill_after_the_metadata_files_leaves_them_to_the_rollback(node):
    claim = node.claim(*MIXED)
    dying = node.launch("--trap-in", "prepare", "--trap-at", "step:write-device-metadata")
    assert dying.call("prepare", ref(claim)) is None
    assert dying.killed(), dying.stderr()
    assert metadata_files(node.root) == [f"{ref(claim).uid}/gpu"]

    fresh = node.launch()
    assert fresh.call("start") == "started"  # the entry is of this boot: start leaves it to its claim
    assert metadata_files(node.root) == [f"{ref(claim).uid}/gpu"]
    assert fresh.call("unprepare", ref(claim)) == {ref(claim).uid: ""}  # the Pod went away meanwhile
    assert_released(node)


@pytest.mark.parametrize(("point", "left"), list(UNPREPARE_POINTS.items()), ids=list(UNPREPARE_POINTS))
def test_an_unprepare_killed_anywhere_converges_after_a_restart(node, point, left):
    claim = node.claim(*MIXED)
    dying = node.launch("--trap-in", "unprepare", "--trap-at", point)
    answer = dying.call("prepare", ref(claim))
    assert_prepared_once(node, claim, answer)
    assert dying.call("unprepare", ref(claim)) is None
    assert dying.killed(), dying.stderr()
    assert leftover(node, ref(claim).uid) == left

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert fresh.call("unprepare", ref(claim)) == {ref(claim).uid: ""}
    assert_released(node)
    assert fresh.call("unprepare", ref(claim)) == {ref(claim).uid: ""}  # and once more: a no-op
    assert_released(node)
    assert not status_problems(node, claim, prepared=False)
