# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node the crash-safety tests of prepare and unprepare (tests/e2e/test_prepare_*.py) run on.

Each test runs the handler's PrepareService, built as ``gpu-handler run`` builds it, in processes
of its own (tests/e2e/prepare_launcher.py) against one fake API server per test module: the
``server`` and ``node`` fixtures here. The simulated MIG state lives in a file under the host root,
so what a dead process created is still there for its successor, as on a real GPU. The checks
here say what a converged node looks like: the claim prepared exactly once, or nothing left.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.simulator.host.sim_mig_state import PersistentSimMig
from deckhouse_gpu.simulator.host.sim_nvml import from_model_list
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
    checkpoint_claims,
    claim_specs,
    gi_dirs,
    metadata_files,
    mig_state,
    placements,
    ref,
)

MIG_0, MIG_1, MIG_2 = (f"gpu-0000-17-00-0-mig-1g-6gb-{start}" for start in (0, 1, 2))
WHOLE_B = "gpu-0000-31-00-0"
MIXED = (MIG_0, MIG_1, WHOLE_B)  # two MIG instances on A (MIG off before), all of card B
ONE_G = 14  # the A30's 1g.6gb GPU instance profile
_names = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeApiServer]:
    """One API server for the module: each test has its own host root and its own claims."""
    # PODS: prepare and unprepare list the node's MPS daemon Pods (MPS sharing).
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
    # One metadata file for the request, mounted by every device of it.
    assert metadata_files(node.root) == [f"{uid}/gpu"]
    for device in spec["devices"]:
        (mount,) = device["containerEdits"]["mounts"]
        assert mount["hostPath"] == f"/{PLUGIN_DIR}/dra-device-metadata/{uid}/gpu/metadata.json"


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
    assert metadata_files(node.root) == []
    assert checkpoint_claims(node.root) == {}


def leave_in_mig_mode(root: Path, card: str) -> None:
    """The card switched into MIG mode by hand, with no instance: in the simulated state the
    handler's processes read, for cards of the same models and UUIDs as theirs."""
    nvml = from_model_list("a30,a30", [CARD_A, CARD_B], node_name=NODE)
    PersistentSimMig.under(nvml, root).set_mig_mode(card, True)


def switches(node: Node, uid: str) -> tuple[str | None, list[str], list[str], bool, bool, int, bool]:
    """What a kill leaves around the MIG mode switches: the entry's state, the cards it recorded
    switching MIG on and off, the MIG modes of A and B, the instances on A, a CDI spec."""
    entry = checkpoint_claims(node.root).get(uid) or {}
    state = mig_state(node.root)
    on, off = entry.get("migEnabledCards", []), entry.get("migDisabledCards", [])
    a, b, spec = state[CARD_A], state[CARD_B], cdi_spec(node.root, uid) is not None
    return (entry.get("state"), on, off, a["migCurrent"], b["migCurrent"], len(a["instances"]), spec)


def assert_card_b(node: Node, mig_mode: bool) -> None:
    """Card B is in the MIG mode expected, with nothing pending and no instance."""
    state = mig_state(node.root)[CARD_B]
    assert (state["migCurrent"], state["migPending"], state["instances"]) == (mig_mode, mig_mode, [])


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
