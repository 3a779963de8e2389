# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Two gpu-handler processes preparing and unpreparing claims on one card at once, on the node of
tests/e2e/crash_node.py: the node lock keeps them apart, and both succeed.
"""

from __future__ import annotations

import time

from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from tests.e2e import crash_node
from tests.e2e.crash_node import MIG_0, MIG_2, ONE_G, WHOLE_B, assert_released
from tests.e2e.sim_node import CARD_A, cdi_spec, checkpoint_claims, mig_state, placements, ref

# One fake API server for this module, a host root of its own for each test (bound here for pytest).
server, node = crash_node.server, crash_node.node


def test_two_prepares_race_for_the_node_lock_and_both_succeed(node):
    first_claim, second_claim = node.claim(MIG_0, WHOLE_B), node.claim(MIG_2)
    marker = node.root / "holding"
    holder = node.launch("--trap-in", "prepare", "--trap-at", "step:create-mig",
                         "--hold-seconds", "1.5", "--hold-marker", str(marker))  # fmt: skip
    waiter = node.launch()
    holder.send("prepare", ref(first_claim))
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), holder.stderr()
    asked = time.monotonic()
    second = waiter.call("prepare", ref(second_claim))
    assert time.monotonic() - asked > 1.0  # it waited for the lock the holder kept
    first = holder.read()
    assert first[ref(first_claim).uid]["error"] == ""
    assert second[ref(second_claim).uid]["error"] == ""

    entries = checkpoint_claims(node.root)
    assert {entry["state"] for entry in entries.values()} == {"PrepareCompleted"}
    assert set(entries) == {ref(first_claim).uid, ref(second_claim).uid}
    assert entries[ref(first_claim).uid]["migEnabledCards"] == [CARD_A]  # the first switched MIG on
    assert placements(node.root, CARD_A) == [(ONE_G, 0), (ONE_G, 2)]
    for claim in (first_claim, second_claim):
        spec = cdi_spec(node.root, ref(claim).uid)
        assert spec is not None
        assert validate_spec(spec) == []

    # Unprepared in the other processes: the one that switched MIG on leaves first, the card stays
    # in MIG mode for the other claim, which then switches it off.
    assert waiter.call("unprepare", ref(first_claim)) == {ref(first_claim).uid: ""}
    assert mig_state(node.root)[CARD_A]["migCurrent"]
    assert checkpoint_claims(node.root)[ref(second_claim).uid]["migEnabledCards"] == [CARD_A]
    assert holder.call("unprepare", ref(second_claim)) == {ref(second_claim).uid: ""}
    assert_released(node)
