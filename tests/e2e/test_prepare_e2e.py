# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""End to end on the simulator over real sockets: gpu-node-agent, gpu-handler and a kubelet.

A fake API server holds the Node, the agent's PhysicalGPUs (DriverReady set as the controller
sets it) and the ResourceClaims as the scheduler allocates them. ``gpu-handler run --nvml-sim``
runs as a process on a simulated host root; the fake kubelet finds its registration socket and
calls NodePrepareResources and NodeUnprepareResources over gRPC. After every call the test reads
what the handler left: the CDI spec, the checkpoint, the simulated MIG state and /proc tree, the
republished ResourceSlices and the claim's status.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY
from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig
from testkit.prepare_world import allocate
from testkit.waiting import wait_for
from tests.e2e.sim_node import (
    CARD_A,
    CARD_B,
    NODE,
    PLUGIN_DIR,
    build_host,
    cdi_spec,
    checkpoint_claims,
    claim_specs,
    gi_dirs,
    handler_args,
    mig_state,
    placements,
    ref,
)
from tests.support.fake_kubelet import FakeKubelet, PluginConnection

DRIVER = "gpu.deckhouse.io"
WHOLE_A, WHOLE_B = "gpu-0000-17-00-0", "gpu-0000-31-00-0"
MIG_PROFILES = (
    "gpu-0000-17-00-0-mig-1g-6gb-0",
    "gpu-0000-17-00-0-mig-1g-6gb-1",
    "gpu-0000-17-00-0-mig-2g-12gb-2",
)
A_MIG_OFFER, B_MIG_OFFER = "gpu-0000-17-00-0-mig-1g-6gb-3", "gpu-0000-31-00-0-mig-1g-6gb-0"
T0 = "2026-11-21T00:00:00Z"


class Cluster:
    """The API server, the handler process on the simulated host, and the kubelet it registered with."""

    def __init__(self, root: Path, server: FakeApiServer, kubeconfig: str, log: Path) -> None:
        self.root, self.server, self.kubeconfig, self.log = root, server, kubeconfig, log
        self.kubelets: list[FakeKubelet] = []

    def start_handler(self) -> None:
        """``gpu-handler run`` as a process; the kubelet registers the plugin it serves."""
        serving = self._serving()
        with self.log.open("ab") as stderr:  # a file, not a pipe: a full pipe would stall the handler
            self.handler = subprocess.Popen(
                [sys.executable, "-m", "deckhouse_gpu.simulator.gpu_handler", "run",
                 *handler_args(self.root, self.kubeconfig), "--health-address", "127.0.0.1:0",
                 "--metrics-address", "127.0.0.1:0"],
                stderr=stderr, env={**os.environ, "LOG_LEVEL": "info"},
            )  # fmt: skip
        # A killed handler leaves its sockets behind; the kubelet would dial the stale one first.
        wait_for(lambda: self._serving() > serving, timeout=20, what="the plugin serving")
        kubelet = FakeKubelet(str(self.root / "var/lib/kubelet/plugins_registry"))
        self.kubelets.append(kubelet)
        self.plugin: PluginConnection = kubelet.wait_for_plugins(1, timeout=20)[0]
        assert self.plugin.name == DRIVER

    def _serving(self) -> int:
        """How many handler processes said they serve the kubelet: "kubelet plugin serving" in the log."""
        return self.log.read_text().count("kubelet plugin serving") if self.log.exists() else 0

    def stop(self) -> None:
        for kubelet in self.kubelets:
            kubelet.close()
        if self.handler.poll() is None:
            self.handler.send_signal(signal.SIGTERM)
            self.handler.wait(timeout=15)

    def reported_mig_mode(self, address: str) -> str | None:
        """What the handler's capabilities pass wrote: the MIG mode NVML reports for the card."""
        status = self.server.kube.get(PHYSICAL_GPUS, physical_gpu_name(NODE, address))["status"]
        return (((status.get("currentState") or {}).get("nvidia") or {}).get("mig") or {}).get("mode")

    def offers(self) -> set[str]:
        return {device["name"] for s in self.slices() for device in s["spec"].get("devices") or []}

    def slices(self) -> list[dict[str, Any]]:
        return [s for s in self.server.kube.list(RESOURCE_SLICES).items if s["spec"].get("nodeName") == NODE]

    def wait_for_offers(self, present: set[str], absent: set[str]) -> None:
        """The publisher republishes on a mode change: wait for it, then check the whole pool."""
        wait_for(
            lambda: present <= self.offers() and not absent & self.offers(),
            timeout=15,
            what=f"offers {sorted(present)} without {sorted(absent)}",
        )
        assert validate_pool(self.slices(), 35) == []

    def claim_devices(self, claim: dict[str, Any]) -> list[dict[str, Any]]:
        stored = self.server.kube.get(RESOURCE_CLAIMS, claim["metadata"]["name"], namespace="ns")
        return (stored.get("status") or {}).get("devices") or []


def _run_agent(root: Path, kubeconfig: str) -> None:
    agent = subprocess.run(
        [sys.executable, "-m", "deckhouse_gpu.cmd.gpu_node_agent", "--once", "--node-name", NODE,
         "--host-root", str(root), "--kubeconfig", kubeconfig],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert agent.returncode == 0, agent.stderr


def _driver_ready(server: FakeApiServer) -> None:
    """What gpu-controller writes once the validator on the node reports the driver ready."""
    ready = {"type": DRIVER_READY, "status": "True", "reason": "ValidatorReady", "message": "",
             "lastTransitionTime": T0}  # fmt: skip
    for card in server.kube.list(PHYSICAL_GPUS).items:
        server.kube.patch(
            PHYSICAL_GPUS, card["metadata"]["name"], {"status": {"conditions": [ready]}}, subresource="status"
        )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One running handler for the module; every test unprepares what it prepared."""
    short = Path(tempfile.mkdtemp(prefix="gpu-"))  # Unix socket paths have at most 107 bytes
    root = build_host(short / "host").root
    # PODS: prepare and unprepare list the node's MPS daemon Pods (MPS sharing).
    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS)
    with FakeApiServer(resources=resources) as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        kubeconfig = write_kubeconfig(short, server.url)
        _run_agent(root, kubeconfig)
        _driver_ready(server)
        log = short / "handler.log"
        found = Cluster(root, server, kubeconfig, log)
        try:
            found.start_handler()
            found.wait_for_offers({WHOLE_A, WHOLE_B, A_MIG_OFFER, B_MIG_OFFER}, set())
            yield found
        except BaseException:
            print(log.read_text()[-4000:])
            raise
        finally:
            found.stop()
            shutil.rmtree(short, ignore_errors=True)
        assert found.handler.returncode == 0


def prepare(cluster: Cluster, claim: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """NodePrepareResources over the socket; the CDI ids per device, checked against the spec."""
    uid = ref(claim).uid
    result = cluster.plugin.prepare([ref(claim)])[uid]
    assert result.error == ""
    ids = {device.device_name: device.cdi_device_ids for device in result.devices}
    spec = cdi_spec(cluster.root, uid)
    assert spec is not None
    assert validate_spec(spec) == []
    assert {f"{DRIVER}/gpu={d['name']}" for d in spec["devices"]} == {i for v in ids.values() for i in v}
    entry = checkpoint_claims(cluster.root)[uid]
    assert entry["state"] == "PrepareCompleted"
    assert sorted(d["device"] for d in entry["devices"]) == sorted(ids)
    status = cluster.claim_devices(claim)
    assert sorted(d["device"] for d in status) == sorted(ids)
    assert {c["type"]: c["status"] for d in status for c in d["conditions"]} == {"Ready": "True"}
    return ids


def unprepare(cluster: Cluster, claim: dict[str, Any]) -> None:
    assert cluster.plugin.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert cdi_spec(cluster.root, ref(claim).uid) is None
    assert claim_specs(cluster.root) == []
    assert checkpoint_claims(cluster.root) == {}
    assert cluster.claim_devices(claim) == []
    state = mig_state(cluster.root)
    assert [state[card]["instances"] for card in (CARD_A, CARD_B)] == [[], []]
    assert not state[CARD_A]["migCurrent"]
    assert gi_dirs(cluster.root, 0) == []


def test_a_physical_card_is_prepared_and_its_mig_offers_withdrawn(cluster):
    claim = allocate(cluster.server.kube, "whole", WHOLE_B)
    ids = prepare(cluster, claim)
    assert list(ids) == [WHOLE_B]
    spec = cdi_spec(cluster.root, ref(claim).uid)
    assert spec is not None
    nodes = [n["path"] for d in spec["devices"] for n in d["containerEdits"]["deviceNodes"]]
    assert "/dev/nvidia1" in nodes
    assert not any("nvidia-caps" in path for path in nodes)
    assert not mig_state(cluster.root)[CARD_B]["migCurrent"]
    # B is taken whole: its MIG offers would double-book it; card A still offers both ways.
    cluster.wait_for_offers({WHOLE_B, WHOLE_A, A_MIG_OFFER}, {B_MIG_OFFER})

    unprepare(cluster, claim)
    cluster.wait_for_offers({WHOLE_A, WHOLE_B, A_MIG_OFFER, B_MIG_OFFER}, set())


def test_several_mig_profiles_on_one_card(cluster):
    claim = allocate(cluster.server.kube, "mig", *MIG_PROFILES)
    ids = prepare(cluster, claim)
    assert sorted(ids) == sorted(MIG_PROFILES)
    state = mig_state(cluster.root)[CARD_A]
    assert state["migCurrent"]
    assert placements(cluster.root, CARD_A) == [(5, 2), (14, 0), (14, 1)]  # 2g.12gb at 2, 1g.6gb at 0 and 1
    assert gi_dirs(cluster.root, 0) == sorted(i["gpuInstanceID"] for i in state["instances"])
    entry = checkpoint_claims(cluster.root)[ref(claim).uid]
    assert {r["uuid"] for r in entry["mig"]} == {i["uuid"] for i in state["instances"]}
    assert entry["migEnabledCards"] == [CARD_A]
    status = {d["device"]: d["data"]["migUUID"] for d in cluster.claim_devices(claim)}
    assert set(status.values()) == {i["uuid"] for i in state["instances"]}
    spec = cdi_spec(cluster.root, ref(claim).uid)
    assert spec is not None
    for device in spec["devices"]:  # each device gets its own GPU and compute instance caps nodes
        paths = [n["path"] for n in device["containerEdits"]["deviceNodes"]]
        assert sum("nvidia-caps" in path for path in paths) == 2
    # A is in MIG mode: no whole-card offer for it, its free MIG placements stay; B is untouched.
    cluster.wait_for_offers({A_MIG_OFFER, WHOLE_B, B_MIG_OFFER}, {WHOLE_A})
    wait_for(lambda: cluster.reported_mig_mode(CARD_A) == "Enabled", timeout=15, what="MIG Enabled reported")

    unprepare(cluster, claim)
    assert not mig_state(cluster.root)[CARD_A]["migPending"]
    cluster.wait_for_offers({WHOLE_A, WHOLE_B, A_MIG_OFFER, B_MIG_OFFER}, set())
    wait_for(
        lambda: cluster.reported_mig_mode(CARD_A) == "Disabled", timeout=15, what="MIG Disabled reported"
    )


def test_two_cards_in_one_claim(cluster):
    claim = allocate(cluster.server.kube, "pair", WHOLE_A, WHOLE_B)
    ids = prepare(cluster, claim)
    assert sorted(ids) == [WHOLE_A, WHOLE_B]
    spec = cdi_spec(cluster.root, ref(claim).uid)
    assert spec is not None
    by_device = {d["name"]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in spec["devices"]}
    assert by_device[f"{ref(claim).uid}-{WHOLE_A}"] == ["/dev/nvidia0"]
    assert by_device[f"{ref(claim).uid}-{WHOLE_B}"] == ["/dev/nvidia1"]
    assert list(checkpoint_claims(cluster.root)) == [ref(claim).uid]
    cluster.wait_for_offers({WHOLE_A, WHOLE_B}, {A_MIG_OFFER, B_MIG_OFFER})

    unprepare(cluster, claim)
    cluster.wait_for_offers({WHOLE_A, WHOLE_B, A_MIG_OFFER, B_MIG_OFFER}, set())
    assert (cluster.root / PLUGIN_DIR / "checkpoint.json").exists()


def test_a_killed_handler_finds_the_mig_state_it_left(cluster):
    """Last in the module: it replaces the handler process. The GPU keeps its MIG instances across
    the crash; the new process reports them, offers accordingly and the kubelet's retry is a no-op."""
    claim = allocate(cluster.server.kube, "survivor", MIG_PROFILES[0])
    ids = prepare(cluster, claim)
    created = mig_state(cluster.root)[CARD_A]["instances"]
    cluster.handler.kill()  # SIGKILL: nothing is cleaned up
    cluster.handler.wait(timeout=15)

    cluster.start_handler()
    cluster.wait_for_offers({A_MIG_OFFER, WHOLE_B}, {WHOLE_A})  # offered as prepared, from the start
    wait_for(lambda: cluster.reported_mig_mode(CARD_A) == "Enabled", timeout=15, what="MIG Enabled reported")
    again = cluster.plugin.prepare([ref(claim)])[ref(claim).uid]  # the kubelet got no answer: it retries
    assert again.error == ""
    assert {d.device_name: d.cdi_device_ids for d in again.devices} == ids
    assert mig_state(cluster.root)[CARD_A]["instances"] == created  # the same instance, not a new one

    unprepare(cluster, claim)
    cluster.wait_for_offers({WHOLE_A, WHOLE_B, A_MIG_OFFER, B_MIG_OFFER}, set())
