# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Crash safety of sharing: gpu-handler SIGKILLed at every point of preparing and unpreparing an
MPS share and a time-sliced share, then restarted.

As in test_prepare_crash.py, the handler runs in processes of its own built as ``gpu-handler run``
builds it, on a simulated node whose card settings live in a file under the host root (as a GPU
keeps them across a plugin crash) and whose MPS daemons are Pods on the fake API server, run by
the simulated kubelet. Whatever the kill left, a fresh process's ``start()`` and the kubelet's
retry must converge: the share prepared once, with exactly its daemon and card settings; after
the unprepare, the card at its defaults and no daemon.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.services.prepare.prepare_steps import PREPARE_STEPS
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_objects import ready_card
from tests.e2e import crash_node
from tests.e2e.crash_node import Node
from tests.e2e.sim_node import CARD_A, CARD_B, NODE, cdi_spec, checkpoint_claims, metadata_files
from tests.services.prepare.sharing_world import MPS, NAMESPACE, share_claim, time_slicing

DAEMON = "gpu-mps-w1-gpu-0000-17-00-0"
node = crash_node.node  # a host root of its own per test, on this module's server


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS)
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


@pytest.fixture(autouse=True)
def no_daemons_left(server) -> Iterator[None]:
    """Every test starts without daemon Pods: they live on the module's server, not the host root."""
    yield
    for pod in server.kube.list(PODS, namespace=NAMESPACE).items:
        server.kube.delete(PODS, pod["metadata"]["name"], namespace=NAMESPACE)


_count = iter(range(10_000))


def claim(node: Node, parameters: dict[str, Any]) -> ClaimRef:
    return share_claim(node.server.kube, f"share-{next(_count)}", "s1", "25", parameters)


def card_a(node: Node) -> tuple[str, str]:
    settings = SimCardSettings.under(node.root, [CARD_A, CARD_B])
    return str(settings.compute_mode(CARD_A)), str(settings.time_slice(CARD_A))


def pods(node: Node) -> list[str]:
    return sorted(p["metadata"]["name"] for p in node.server.kube.list(PODS, namespace=NAMESPACE).items)


def state(node: Node, uid: str) -> tuple[str | None, str, str, list[str], bool]:
    """The entry's state, card A's compute mode and time-slice, the daemon Pods, a CDI spec."""
    entry = checkpoint_claims(node.root).get(uid) or {}
    mode, interval = card_a(node)
    return (entry.get("state"), mode, interval, pods(node), cdi_spec(node.root, uid) is not None)


def assert_prepared(node: Node, ref: ClaimRef, answer: dict[str, Any], mps: bool) -> None:
    assert answer[ref.uid]["error"] == ""
    assert list(checkpoint_claims(node.root)) == [ref.uid]
    assert metadata_files(node.root) == [f"{ref.uid}/gpu"]
    spec = cdi_spec(node.root, ref.uid)
    assert spec is not None
    env = spec["devices"][0]["containerEdits"].get("env", [])
    if mps:
        assert state(node, ref.uid) == ("PrepareCompleted", "ExclusiveProcess", "Default", [DAEMON], True)
        assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in env
    else:
        assert state(node, ref.uid) == ("PrepareCompleted", "Default", "Long", [], True)
        assert not [e for e in env if e.startswith("CUDA_MPS")]


def assert_released(node: Node, uid: str) -> None:
    assert state(node, uid) == (None, "Default", "Default", [], False)
    assert checkpoint_claims(node.root) == {}
    assert metadata_files(node.root) == []


Left = tuple[str | None, str, str, list[str], bool]
NOTHING: Left = (None, "Default", "Default", [], False)
STARTED: Left = ("PrepareStarted", "Default", "Default", [], False)
MPS_MODE: Left = ("PrepareStarted", "ExclusiveProcess", "Default", [], False)
MPS_UP: Left = ("PrepareStarted", "ExclusiveProcess", "Default", [DAEMON], False)
LONG: Left = ("PrepareStarted", "Default", "Long", [], False)
# Where a prepare can die, and what it leaves: (entry, compute mode, time-slice, daemons, spec).
MPS_POINTS = {
    "step:check-config": NOTHING,
    "step:invariant-guard": NOTHING,
    "step:mark-started": STARTED,
    "step:create-mig": STARTED,
    "share:1": MPS_MODE,  # compute mode set, no daemon yet
    "step:set-card-sharing": MPS_MODE,
    "share:2": MPS_UP,  # the daemon Pod created, not waited for
    "step:start-mps": MPS_UP,
    "step:write-device-metadata": MPS_UP,
    "step:write-cdi": ("PrepareStarted", "ExclusiveProcess", "Default", [DAEMON], True),
    "step:mark-completed": ("PrepareCompleted", "ExclusiveProcess", "Default", [DAEMON], True),
}
SLICING_POINTS = {
    "share:1": LONG,
    "step:set-card-sharing": LONG,
    "step:start-mps": LONG,
    "step:mark-completed": ("PrepareCompleted", "Default", "Long", [], True),
}
# Where an unprepare can die: after the daemon is stopped, after the compute mode is given back.
MPS_UNPREPARE = {
    "share:1": ("PrepareCompleted", "ExclusiveProcess", "Default", [], True),
    "share:2": ("PrepareCompleted", "Default", "Default", [], True),
    "save:1": NOTHING,
}
SLICING_UNPREPARE = {
    "share:1": ("PrepareCompleted", "Default", "Default", [], True),
    "save:1": NOTHING,
}
CASES = [("mps", point, left) for point, left in MPS_POINTS.items()]
CASES += [("slicing", point, left) for point, left in SLICING_POINTS.items()]
UNPREPARE_CASES = [("mps", point, left) for point, left in MPS_UNPREPARE.items()]
UNPREPARE_CASES += [("slicing", point, left) for point, left in SLICING_UNPREPARE.items()]


def config(kind: str) -> dict[str, Any]:
    return MPS if kind == "mps" else time_slicing("Long")


def test_the_sharing_steps_are_kill_points():
    sharing_steps = {"step:set-card-sharing", "step:start-mps"}
    assert sharing_steps <= {f"step:{step.name}" for step in PREPARE_STEPS}
    assert sharing_steps <= set(MPS_POINTS)


@pytest.mark.parametrize(("kind", "point", "left"), CASES, ids=[f"{k}-{p}" for k, p, _ in CASES])
def test_a_share_prepare_killed_anywhere_converges_after_a_restart(node, kind, point, left):
    ref = claim(node, config(kind))
    dying = node.launch("--trap-in", "prepare", "--trap-at", point)
    assert dying.call("prepare", ref) is None
    assert dying.killed(), dying.stderr()
    assert state(node, ref.uid) == left  # the crash came where it was meant to

    fresh = node.launch()
    assert fresh.call("start") == "started"
    answer = fresh.call("prepare", ref)
    assert_prepared(node, ref, answer, mps=kind == "mps")
    assert fresh.call("prepare", ref) == answer  # the kubelet's next retry changes nothing
    assert fresh.call("unprepare", ref) == {ref.uid: ""}
    assert_released(node, ref.uid)


@pytest.mark.parametrize(
    ("kind", "point", "left"), UNPREPARE_CASES, ids=[f"{k}-{p}" for k, p, _ in UNPREPARE_CASES]
)
def test_a_share_unprepare_killed_anywhere_converges_after_a_restart(node, kind, point, left):
    ref = claim(node, config(kind))
    dying = node.launch("--trap-in", "unprepare", "--trap-at", point)
    assert_prepared(node, ref, dying.call("prepare", ref), mps=kind == "mps")
    assert dying.call("unprepare", ref) is None
    assert dying.killed(), dying.stderr()
    assert state(node, ref.uid) == left

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert fresh.call("unprepare", ref) == {ref.uid: ""}
    assert_released(node, ref.uid)
