# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Crash safety of VFIO passthrough: gpu-handler SIGKILLed at every point of preparing and
unpreparing a whole A30 for a virtual machine, then restarted (docs/VFIO.md, DESIGN.md D9).

As in test_prepare_crash.py, the handler runs in processes of its own built as ``gpu-handler run``
builds it, here on a node whose cards sit in IOMMU groups of their own with an audio function each,
and whose simulated kernel really moves the drivers (simulator/host/sim_vfio.py): what a dead process
moved is still moved for its successor. Whatever the kill left, a fresh process's ``start()`` and the
kubelet's retry must converge: the card passed through once, then both functions back on nvidia and
snd_hda_intel with nothing recorded anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.services.prepare.prepare_steps import PREPARE_STEPS
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_objects import ready_card
from testkit.kubeconfig import write_kubeconfig
from testkit.vfio_world import AUDIO, allocate_vfio
from tests.e2e.crash_node import Node
from tests.e2e.sim_node import CARD_A, CARD_B, NODE, PLUGIN_DIR, build_host, cdi_spec, checkpoint_claims, ref

AUDIO_A = CARD_A[:-1] + "1"
GROUP_A = 40


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS)
    with FakeApiServer(resources=resources) as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        for address in (CARD_A, CARD_B):
            card = ready_card(NODE, address, "a30")
            status = card.pop("status")
            status["nodeInfo"]["bareMetal"] = True
            server.kube.create(PHYSICAL_GPUS, card)
            server.kube.patch(
                PHYSICAL_GPUS, card["metadata"]["name"], {"status": status}, subresource="status"
            )
        yield server


def build_vfio_host(root: Path) -> HostBuilder:
    """The crash tests' node with the IOMMU on: card A and its audio function in group 40."""
    host = build_host(root)
    host.load_driver("vfio-pci").load_driver("snd_hda_intel")
    host.add_gpu("a30", CARD_A, "nvidia", iommu_group=GROUP_A)
    host.add_gpu("a30", CARD_B, "nvidia", iommu_group=GROUP_A + 1)
    host.add_function(AUDIO_A, AUDIO, "snd_hda_intel", GROUP_A)
    return host


@pytest.fixture
def node(server, tmp_path) -> Iterator[Node]:
    build_vfio_host(tmp_path / "host")
    found = Node(tmp_path / "host", write_kubeconfig(tmp_path, server.url), server, [])
    yield found
    for launcher in found.launchers:
        launcher.close()


_names = iter(range(10_000))


def claim(node: Node) -> ClaimRef:
    return ref(allocate_vfio(node.server.kube, f"vm-{next(_names)}", "gpu-0000-17-00-0"))


def driver(node: Node, address: str) -> str | None:
    link = node.root / "sys/bus/pci/devices" / address / "driver"
    return link.resolve().name if link.is_symlink() else None


def ledger(node: Node) -> list[str]:
    return sorted(p.stem for p in (node.root / PLUGIN_DIR / "vfio-ledger").glob("*.json"))


def payload(node: Node, uid: str) -> dict[str, Any] | None:
    path = node.root / PLUGIN_DIR / "vfio-payload" / f"{uid}.json"
    return json.loads(path.read_text()) if path.exists() else None


Left = tuple[str | None, int, str | None, str | None, bool, bool]


def state(node: Node, uid: str) -> Left:
    """The entry's state and VFIO records, the drivers of A and its audio, a payload, a CDI spec."""
    entry = checkpoint_claims(node.root).get(uid) or {}
    spec = cdi_spec(node.root, uid) is not None
    return (
        entry.get("state"),
        len(entry.get("vfio", [])),
        driver(node, CARD_A),
        driver(node, AUDIO_A),
        payload(node, uid) is not None,
        spec,
    )


NOTHING: Left = (None, 0, "nvidia", "snd_hda_intel", False, False)
STARTED: Left = ("PrepareStarted", 0, "nvidia", "snd_hda_intel", False, False)
BOUND: Left = ("PrepareStarted", 2, "vfio-pci", "vfio-pci", False, False)
# Where a prepare can die, and what it leaves. The GPU function moves first, then its audio: each
# recorded (save) before it moves (vfio), so a kill between the two finds the record of a move
# that may or may not have happened.
PREPARE_POINTS: dict[str, Left] = {
    "step:check-vfio": NOTHING,
    "step:mark-started": STARTED,
    "step:switch-mig-mode": STARTED,
    "save:2": ("PrepareStarted", 1, "nvidia", "snd_hda_intel", False, False),
    "vfio:1": ("PrepareStarted", 1, "vfio-pci", "snd_hda_intel", False, False),
    "save:3": ("PrepareStarted", 2, "vfio-pci", "snd_hda_intel", False, False),
    "vfio:2": BOUND,
    "step:bind-vfio": BOUND,
    "step:write-device-metadata": BOUND,
    "step:write-vfio-payload": ("PrepareStarted", 2, "vfio-pci", "vfio-pci", True, False),
    "step:write-cdi": ("PrepareStarted", 2, "vfio-pci", "vfio-pci", True, True),
    "step:mark-completed": ("PrepareCompleted", 2, "vfio-pci", "vfio-pci", True, True),
}
# Where an unprepare can die: newest move first, each given back (vfio) before its record goes (save).
UNPREPARE_POINTS: dict[str, Left] = {
    "vfio:1": ("PrepareCompleted", 2, "vfio-pci", "snd_hda_intel", True, True),
    "save:1": ("PrepareCompleted", 1, "vfio-pci", "snd_hda_intel", True, True),
    "vfio:2": ("PrepareCompleted", 1, "nvidia", "snd_hda_intel", True, True),
    "save:2": ("PrepareCompleted", 0, "nvidia", "snd_hda_intel", True, True),
    "save:3": NOTHING,
}


def assert_passed_through(node: Node, uid: str, answer: dict[str, Any]) -> None:
    assert answer[uid]["error"] == ""
    assert list(checkpoint_claims(node.root)) == [uid]
    assert state(node, uid) == ("PrepareCompleted", 2, "vfio-pci", "vfio-pci", True, True)
    assert ledger(node) == [CARD_A, AUDIO_A]
    spec = cdi_spec(node.root, uid)
    assert spec is not None
    assert validate_spec(spec) == []
    nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    assert nodes == ["/dev/vfio/vfio", f"/dev/vfio/{GROUP_A}"]
    document = payload(node, uid)
    assert document is not None
    functions = document["devices"][0]["functions"]
    assert [(f["pciAddress"], f["originalDriver"]) for f in functions] == [
        (CARD_A, "nvidia"),
        (AUDIO_A, "snd_hda_intel"),
    ]


def assert_given_back(node: Node, uid: str) -> None:
    assert state(node, uid) == NOTHING
    assert checkpoint_claims(node.root) == {}
    assert ledger(node) == []
    assert (node.root / f"dev/vfio/{GROUP_A}").exists() is False
    assert (node.root / "proc/driver/nvidia/gpus" / CARD_A / "information").exists()  # the driver has it


def test_the_vfio_steps_are_kill_points():
    vfio_steps = {"step:check-vfio", "step:bind-vfio", "step:write-vfio-payload"}
    assert vfio_steps <= {f"step:{step.name}" for step in PREPARE_STEPS}
    assert vfio_steps <= set(PREPARE_POINTS)


@pytest.mark.parametrize(("point", "left"), list(PREPARE_POINTS.items()), ids=list(PREPARE_POINTS))
def test_a_vfio_prepare_killed_anywhere_converges_after_a_restart(node, point, left):
    vm = claim(node)
    dying = node.launch("--trap-in", "prepare", "--trap-at", point)
    assert dying.call("prepare", vm) is None
    assert dying.killed(), dying.stderr()
    assert state(node, vm.uid) == left  # the crash came where it was meant to

    fresh = node.launch()  # NVML of the new process sees card A only if it is on nvidia now
    assert fresh.call("start") == "started"
    answer = fresh.call("prepare", vm)
    assert_passed_through(node, vm.uid, answer)
    assert fresh.call("prepare", vm) == answer  # the kubelet's next retry changes nothing
    assert fresh.call("unprepare", vm) == {vm.uid: ""}
    assert_given_back(node, vm.uid)


@pytest.mark.parametrize(("point", "left"), list(UNPREPARE_POINTS.items()), ids=list(UNPREPARE_POINTS))
def test_a_vfio_unprepare_killed_anywhere_converges_after_a_restart(node, point, left):
    vm = claim(node)
    dying = node.launch("--trap-in", "unprepare", "--trap-at", point)
    assert_passed_through(node, vm.uid, dying.call("prepare", vm))
    assert dying.call("unprepare", vm) is None
    assert dying.killed(), dying.stderr()
    assert state(node, vm.uid) == left

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert fresh.call("unprepare", vm) == {vm.uid: ""}
    assert_given_back(node, vm.uid)
    assert fresh.call("unprepare", vm) == {vm.uid: ""}  # and once more: a no-op
    assert_given_back(node, vm.uid)


def test_functions_no_entry_owns_are_given_back_at_start(node):
    """The checkpoint set aside (a person resetting the node) after a VM's prepare: the ledger still
    says what this driver moved, and the next start gives it back."""
    vm = claim(node)
    first = node.launch()
    assert_passed_through(node, vm.uid, first.call("prepare", vm))
    first.close()
    checkpoint = node.root / PLUGIN_DIR / "checkpoint.json"
    checkpoint.rename(checkpoint.with_name("reset-checkpoint.json"))

    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert_given_back(node, vm.uid)
    assert cdi_spec(node.root, vm.uid) is None  # no entry owns it either


def test_an_administrators_vfio_binding_is_left_alone_at_start(node):
    """A function on vfio-pci that this driver did not move is no leftover of it."""
    host = HostBuilder(node.root)
    host.bind_driver(CARD_B, "vfio-pci")
    fresh = node.launch()
    assert fresh.call("start") == "started"
    assert driver(node, CARD_B) == "vfio-pci"
    assert ledger(node) == []
