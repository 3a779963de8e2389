"""Crash safety of prepare and unprepare: gpu-handler SIGKILLed at every point, then restarted.

Each test runs the handler's PrepareService, built as ``gpu-handler run`` builds it, in processes
of its own (tests/e2e/prepare_launcher.py) against one fake API server. A process dies at a chosen
point (no undo, no finally); a fresh one runs ``start()`` and the call again, as the kubelet retries
a call that got no answer, and the node must converge: the claim prepared exactly once, then
nothing left. The simulated MIG state lives in a file under the host root, so what a dead
process created is still there for its successor, as on a real GPU.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.sim.driver_tree import write
from deckhouse_gpu.domain.prepare.cdi_rules import validate_spec
from deckhouse_gpu.domain.prepare.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.services.prepare_steps import PREPARE_STEPS
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_objects import ready_card
from testkit.kubeconfig import write_kubeconfig
from testkit.prepare_world import allocate
from tests.e2e.sim_node import (
    CARD_A,
    CARD_B,
    NODE,
    PLUGIN_DIR,
    Launcher,
    build_host,
    cdi_spec,
    checkpoint_boot_id,
    checkpoint_claims,
    claim_specs,
    gi_dirs,
    mig_state,
    placements,
    ref,
)

MIG_0, MIG_1, MIG_2 = (f"gpu-0000-17-00-0-mig-1g-6gb-{start}" for start in (0, 1, 2))
WHOLE_B = "gpu-0000-31-00-0"
MIXED = (MIG_0, MIG_1, WHOLE_B)  # two MIG instances on A (MIG off before), all of card B
ONE_G = 14  # the A30's 1g.6gb GPU instance profile
# What a kill leaves: (checkpoint state of the claim, MIG records in it, instances on card A,
# MIG mode of A, CDI spec written).
NOTHING = (None, 0, 0, False, False)
STARTED = ("PrepareStarted", 0, 0, False, False)
# Where a prepare of MIXED can die: every step boundary, and inside create-mig: after the intent
# to switch MIG on is saved, after the switch, after each create (before its record) and record.
PREPARE_POINTS = {
    "step:short-circuit-completed": NOTHING,
    "step:roll-back-leftover": NOTHING,
    "step:plan": NOTHING,
    "step:check-config": NOTHING,
    "step:invariant-guard": NOTHING,
    "step:mark-started": STARTED,
    "step:create-mig": ("PrepareStarted", 2, 2, True, False),
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
_names = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    """One API server for the module: each test has its own host root and its own claims."""
    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS)
    with FakeApiServer(resources=resources) as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        for address in (CARD_A, CARD_B):
            card = ready_card(NODE, address, "a30")
            status = card.pop("status")
            server.kube.create(PHYSICAL_GPUS, card)
            server.kube.patch(
                PHYSICAL_GPUS, card["metadata"]["name"], {"status": status}, subresource="status"
            )
        yield server


@dataclass
class Node:
    root: Path
    kubeconfig: str
    server: FakeApiServer
    launchers: list[Launcher]

    def launch(self, *trap: str) -> Launcher:
        launcher = Launcher(self.root, self.kubeconfig, *trap)
        self.launchers.append(launcher)
        return launcher

    def claim(self, *devices: str) -> dict[str, Any]:
        return allocate(self.server.kube, f"claim-{next(_names)}", *devices)

    def status_devices(self, claim: dict[str, Any]) -> list[dict[str, Any]]:
        stored = self.server.kube.get(RESOURCE_CLAIMS, claim["metadata"]["name"], namespace="ns")
        return (stored.get("status") or {}).get("devices") or []


@pytest.fixture
def node(server, tmp_path) -> Iterator[Node]:
    build_host(tmp_path / "host")
    found = Node(tmp_path / "host", write_kubeconfig(tmp_path, server.url), server, [])
    yield found
    for launcher in found.launchers:
        launcher.close()


def assert_prepared_once(node: Node, claim: dict[str, Any], answer: dict[str, Any]) -> None:
    """MIXED is prepared exactly once: one instance per MIG device and no other, valid spec, entry."""
    uid = ref(claim).uid
    assert answer[uid]["error"] == ""
    assert sorted(answer[uid]["devices"]) == sorted(MIXED)
    entries = checkpoint_claims(node.root)
    assert list(entries) == [uid]
    assert entries[uid]["state"] == "PrepareCompleted"
    state = mig_state(node.root)
    assert state[CARD_A]["migCurrent"]
    assert placements(node.root, CARD_A) == [(ONE_G, 0), (ONE_G, 1)]
    live = {i["uuid"] for i in state[CARD_A]["instances"]}
    assert {record["uuid"] for record in entries[uid]["mig"]} == live
    assert gi_dirs(node.root, 0) == sorted(i["gpuInstanceID"] for i in state[CARD_A]["instances"])
    assert not state[CARD_B]["migCurrent"]
    assert state[CARD_B]["instances"] == []
    assert claim_specs(node.root) == [claim_spec_file(uid)]
    spec = cdi_spec(node.root, uid)
    assert spec is not None
    assert validate_spec(spec) == []
    assert {device["name"] for device in spec["devices"]} == {f"{uid}-{device}" for device in MIXED}


def leftover(node: Node, uid: str) -> tuple[str | None, int, int, bool, bool]:
    entry = checkpoint_claims(node.root).get(uid) or {}
    state = mig_state(node.root)[CARD_A]
    spec = cdi_spec(node.root, uid) is not None
    return (entry.get("state"), len(entry.get("mig", [])), len(state["instances"]), state["migCurrent"], spec)


def assert_released(node: Node) -> None:
    state = mig_state(node.root)
    assert state[CARD_A]["instances"] == []
    assert not state[CARD_A]["migCurrent"]
    assert not state[CARD_A]["migPending"]
    assert gi_dirs(node.root, 0) == []
    assert claim_specs(node.root) == []
    assert checkpoint_claims(node.root) == {}


def status_problems(node: Node, claim: dict[str, Any], prepared: bool) -> list[str]:
    """What is wrong with ResourceClaim.status.devices, collected so the host checks run first."""
    devices = node.status_devices(claim)
    if not prepared:
        return [f"status.devices not cleared: {devices}"] if devices else []
    records = checkpoint_claims(node.root)[ref(claim).uid]["mig"]
    found = {d["device"]: d.get("data", {}).get("migUUID") for d in devices}
    if sorted(found) != sorted(MIXED):
        return [f"status.devices lists {sorted(found)}, not {sorted(MIXED)}"]
    if {found[MIG_0], found[MIG_1]} != {r["uuid"] for r in records} or found[WHOLE_B] is not None:
        return [f"status.devices MIG UUIDs {found} are not the recorded ones"]
    return []


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
