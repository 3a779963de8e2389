# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler restarted over a checkpoint it cannot trust: a corrupt one set aside with the MIG
instances and CDI specs it named kept, one from before a reboot, and claims the checkpoint does not
know. Each restart is a fresh process on the node of tests/e2e/crash_node.py.
"""

from __future__ import annotations

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.simulator.host.driver_tree import write
from tests.e2e import crash_node
from tests.e2e.crash_node import MIXED, ONE_G, assert_prepared_once, assert_released
from tests.e2e.sim_node import (
    CARD_A,
    PLUGIN_DIR,
    checkpoint_boot_id,
    checkpoint_claims,
    claim_specs,
    mig_state,
    placements,
    ref,
)

# One fake API server for this module, a host root of its own for each test (bound here for pytest).
server, node = crash_node.server, crash_node.node


def test_a_corrupt_checkpoint_is_set_aside_and_the_handler_keeps_running(node):
    claim = node.claim(*MIXED)
    first = node.launch()
    assert_prepared_once(node, claim, first.call("prepare", ref(claim)))
    first.close()
    checkpoint = node.root / PLUGIN_DIR / "checkpoint.json"
    checkpoint.write_text('{"version": 1, "claims": {')  # a torn write by something else

    restarted = node.launch()
    assert restarted.call("start") == "started"
    assert restarted.process.poll() is None  # no crash loop: it serves on
    assert list(checkpoint.parent.glob("checkpoint.json.corrupt-*"))
    assert checkpoint_claims(node.root) == {}
    # Who owns them is unknown and Pods may use them: the instances and the spec stay.
    assert placements(node.root, CARD_A) == [(ONE_G, 0), (ONE_G, 1)]
    assert claim_specs(node.root) == [claim_spec_file(ref(claim).uid)]
    # The kubelet's unprepare of the claim now finds no entry; it returns success and removes the spec.
    assert restarted.call("unprepare", ref(claim)) == {ref(claim).uid: ""}
    assert claim_specs(node.root) == []


def test_instances_kept_after_a_corrupt_checkpoint_survive_the_next_restart(node):
    claim = node.claim(*MIXED)
    first = node.launch()
    assert first.call("prepare", ref(claim))[ref(claim).uid]["error"] == ""
    first.close()
    (node.root / PLUGIN_DIR / "checkpoint.json").write_text("{garbage")
    assert node.launch().call("start") == "started"  # sets it aside, keeps the instances
    # A second restart (a rolling update, an OOM kill) before the kubelet unprepares anything:
    assert node.launch().call("start") == "started"
    assert placements(node.root, CARD_A) == [(ONE_G, 0), (ONE_G, 1)]
    assert claim_specs(node.root) == [claim_spec_file(ref(claim).uid)]


def test_a_prepare_retried_after_a_corrupt_checkpoint_never_destroys_the_kept_instances(node):
    claim = node.claim(*MIXED)
    first = node.launch()
    assert first.call("prepare", ref(claim))[ref(claim).uid]["error"] == ""
    first.close()
    kept = {i["uuid"] for i in mig_state(node.root)[CARD_A]["instances"]}
    (node.root / PLUGIN_DIR / "checkpoint.json").write_text("{garbage")
    restarted = node.launch()
    assert restarted.call("start") == "started"
    restarted.call("prepare", ref(claim))  # the kubelet lost its own state too and prepares again
    assert kept <= {i["uuid"] for i in mig_state(node.root)[CARD_A]["instances"]}


def test_after_a_reboot_old_entries_are_not_prepared_and_their_specs_go(node):
    claim = node.claim(*MIXED)
    before = node.launch()
    assert_prepared_once(node, claim, before.call("prepare", ref(claim)))
    before.close()
    write(node.root / "proc/sys/kernel/random/boot_id", "0b00b00b-0000-4000-8000-000000000002\n")

    after = node.launch()
    assert after.call("start") == "started"
    assert checkpoint_boot_id(node.root) == "0b00b00b-0000-4000-8000-000000000002"
    assert_released(node)  # no entry, no spec; the reboot took the instances, start() the MIG mode
    answer = after.call("prepare", ref(claim))  # the kubelet prepares again for the restarted Pod
    assert_prepared_once(node, claim, answer)


def test_unprepare_of_an_unknown_claim_changes_nothing_but_a_stray_spec(node):
    prepared = node.claim(*MIXED)
    handler = node.launch()
    answer = handler.call("prepare", ref(prepared))
    stray = node.root / "etc/cdi" / claim_spec_file("stray-uid")
    stray.write_text("{}")  # left by a lost checkpoint
    unknown = [ClaimRef("ns", "stray-uid", "gone"), ClaimRef("ns", "never-seen", "nope")]
    assert handler.call("unprepare", *unknown) == {"stray-uid": "", "never-seen": ""}
    assert not stray.exists()
    assert_prepared_once(node, prepared, answer)  # the prepared claim is untouched
