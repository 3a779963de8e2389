# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every component of the module that talks to the API, as processes against one fake API server,
each with a token of its own, through a day in the life of a node: what tests/e2e/
test_least_privilege.py compares with the Helm-rendered RBAC.

gpu-node-agent inventories a simulated node of two A30s, gpu-controller sets DriverReady from the
validator Pod (leader election on), gpu-handler reads the simulated NVML, publishes offers and
serves the kubelet, gpu-dra-controller (leader election on) allocates the claim of a Pod created
on the node. The kubelet then prepares and unprepares a whole card, a MIG instance, an MPS share
(its daemon Pod created and deleted) and a time-slicing share; a card is unplugged and its
PhysicalGPU deleted; every component stops on SIGTERM and gives its Lease up.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.ports.controller_resources import (
    DEVICE_CLASSES,
    GPU_CLASSES,
    LEASES,
    RESOURCE_CLAIM_TEMPLATES,
)
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    NotFound,
)
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.api_access import AccessLog
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import example_classes
from testkit.kubeconfig import write_kubeconfig
from testkit.prepare_world import allocate
from testkit.waiting import wait_for
from tests.e2e.sim_node import CARD_A, CARD_B, NODE, build_host, handler_args, ref
from tests.services.prepare.sharing_world import MPS, share_claim, time_slicing
from tests.support.controller_objects import add_pod, ready_status
from tests.support.fake_kubelet import FakeKubelet, PluginConnection

RESOURCES = (
    NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS, LEASES, DEVICE_CLASSES, GPU_CLASSES
)  # fmt: skip
COMPONENTS = ("gpu-node-agent", "gpu-controller", "gpu-handler", "gpu-dra-controller")
NAMESPACE = "d8-gpu"
DRIVER = "gpu.deckhouse.io"
TIMEOUT = 30.0


def _commands(root: Path, kubeconfigs: dict[str, str]) -> dict[str, list[str]]:
    # Every address on a free port: the components run side by side on this one host.
    metrics = ("--metrics-address", "127.0.0.1:0")
    python, health = sys.executable, ("--health-address", "127.0.0.1:0", *metrics)
    listen = ("--listen-address", "127.0.0.1:0", *metrics, "--namespace", NAMESPACE)
    return {
        "gpu-node-agent": [python, "-m", "deckhouse_gpu.cmd.gpu_node_agent", "--node-name", NODE,
                           "--host-root", str(root), "--kubeconfig", kubeconfigs["gpu-node-agent"],
                           "--resync-seconds", "0.3", *health],
        "gpu-controller": [python, "-m", "deckhouse_gpu.cmd.gpu_controller",
                           "--kubeconfig", kubeconfigs["gpu-controller"], *listen],
        "gpu-handler": [python, "-m", "deckhouse_gpu.simulator.gpu_handler", "run",
                        *handler_args(root, kubeconfigs["gpu-handler"]), *health],
        "gpu-dra-controller": [python, "-m", "deckhouse_gpu.cmd.gpu_dra_controller.main", "run",
                               "--kubeconfig", kubeconfigs["gpu-dra-controller"], *listen,
                               "--no-webhook", "--k8s-version", "1.35"],
    }  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def running_world() -> Iterator[tuple[FakeApiServer, HostBuilder, dict[str, subprocess.Popen[bytes]]]]:
    """The API server with the node and its validator, the host and the four processes."""
    short = Path(tempfile.mkdtemp(prefix="gpu-"))  # Unix socket paths have at most 107 bytes
    host = build_host(short / "host")
    root = host.root
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        with FakeApiServer(resources=(*RESOURCES, RESOURCE_CLAIM_TEMPLATES)) as server:
            server.kube.create(
                NODES, {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}}
            )
            add_pod(server.kube, f"nvidia-driver-validator-{NODE}", NODE, ready_status())
            # gpu-handler publishes what the cluster's DeviceClasses may select (docs/DRA.md).
            for item in example_classes():
                server.kube.create(DEVICE_CLASSES, item)
            _leftovers(server)
            kubeconfigs = {}
            for component in COMPONENTS:
                (short / component).mkdir()
                kubeconfigs[component] = write_kubeconfig(short / component, server.url, token=component)
            for component, command in _commands(root, kubeconfigs).items():
                with (short / f"{component}.log").open("wb") as log:
                    env = {**os.environ, "LOG_LEVEL": "info"}
                    processes[component] = subprocess.Popen(command, stdout=log, stderr=log, env=env)
            try:
                yield server, host, processes
            except BaseException:
                for component in COMPONENTS:
                    print(f"--- {component}\n{(short / f'{component}.log').read_text()[-3000:]}")
                raise
            finally:
                for process in processes.values():
                    _stop(process)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _leftovers(server: FakeApiServer) -> None:
    """What an earlier run may have left: card A's PhysicalGPU without its labels (gpu-node-agent
    finds it on create, reads it and patches the labels in) and a slice of the node's pool that the
    new layout has no place for (gpu-handler deletes it)."""
    server.kube.create(PHYSICAL_GPUS, {"metadata": {"name": physical_gpu_name(NODE, CARD_A)}, "spec": {}})
    spec = {
        "driver": DRIVER,
        "nodeName": NODE,
        "pool": {"name": f"gpus/{NODE}", "generation": 0, "resourceSliceCount": 1},
        "devices": [],
    }
    labels = {"gpu.deckhouse.io/node": NODE}
    server.kube.create(
        RESOURCE_SLICES, {"metadata": {"name": f"{NODE}-stale", "labels": labels}, "spec": spec}
    )


def _conditions(server: FakeApiServer, address: str) -> dict[str, str]:
    card = server.kube.get(PHYSICAL_GPUS, physical_gpu_name(NODE, address))
    return {c["type"]: c["status"] for c in (card.get("status") or {}).get("conditions") or []}


def _offers(server: FakeApiServer) -> set[str]:
    return {
        d["name"] for s in server.kube.list(RESOURCE_SLICES).items for d in s["spec"].get("devices") or []
    }


def _prepared(plugin: PluginConnection, claim: dict[str, Any]) -> None:
    claim_ref = ref(claim)
    assert plugin.prepare([claim_ref])[claim_ref.uid].error == ""
    assert plugin.unprepare([claim_ref]) == {claim_ref.uid: ""}


def _pod_on_node(server: FakeApiServer) -> dict[str, Any]:
    """A Pod created with spec.nodeName and its claim: gpu-dra-controller allocates it."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu-a30", "count": 1}}
    body = {"metadata": {"name": "infer", "namespace": "ns"}, "spec": {"devices": {"requests": [request]}}}
    server.kube.create(RESOURCE_CLAIMS, body)
    spec = {
        "nodeName": NODE,
        "containers": [{"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "infer"}],
    }
    server.kube.create(PODS, {"metadata": {"name": "infer", "namespace": "ns"}, "spec": spec})

    def allocated() -> bool:
        return bool(
            (server.kube.get(RESOURCE_CLAIMS, "infer", namespace="ns").get("status") or {}).get("allocation")
        )

    wait_for(allocated, timeout=TIMEOUT, what="the claim allocated by gpu-dra-controller")
    return server.kube.get(RESOURCE_CLAIMS, "infer", namespace="ns")


def _gpu_class(server: FakeApiServer) -> None:
    """A GPUClass for VMs: gpu-dra-controller creates its DeviceClass and reports it Ready, then
    patches the DeviceClass when the class changes (the garbage collector deletes it with the class)."""
    spec = {"deviceKind": "Whole", "vfio": True, "cards": {"models": ["a30-pcie"]}}
    server.kube.create(GPU_CLASSES, {"metadata": {"name": "a30-vm"}, "spec": spec})

    def expression() -> str:
        try:
            found = server.kube.get(DEVICE_CLASSES, "a30-vm")
        except NotFound:
            return ""
        return str(found["spec"]["selectors"][0]["cel"]["expression"])

    wait_for(lambda: "a30-pcie" in expression(), timeout=TIMEOUT, what="the GPUClass's DeviceClass")
    server.kube.patch(GPU_CLASSES, "a30-vm", {"spec": {"cards": {"models": ["a30-pcie", "a100-pcie-80gb"]}}})
    wait_for(lambda: "a100-pcie-80gb" in expression(), timeout=TIMEOUT, what="the DeviceClass updated")
    ready = [
        c
        for c in server.kube.get(GPU_CLASSES, "a30-vm").get("status", {}).get("conditions", [])
        if c["type"] == "Ready"
    ]
    assert ready, "the GPUClass has no Ready condition"


def day_of_a_node() -> AccessLog:
    """Runs the world through its steps; the accesses every component made, by its token."""
    with running_world() as (server, host, processes):
        wait_for(lambda: _driver_ready(server), timeout=TIMEOUT, what="both cards DriverReady")
        wait_for(lambda: "gpu-0000-31-00-0" in _offers(server), timeout=TIMEOUT, what="offers published")
        _gpu_class(server)
        claim = _pod_on_node(server)
        kubelet = FakeKubelet(str(host.root / "var/lib/kubelet/plugins_registry"))
        try:
            plugin = kubelet.wait_for_plugins(1, timeout=TIMEOUT)[0]
            _prepared(plugin, claim)
            _prepared(plugin, allocate(server.kube, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0"))
            mps = share_claim(server.kube, "mps", "s1", "25", MPS)
            _prepared(plugin, server.kube.get(RESOURCE_CLAIMS, mps.name, namespace="ns"))
            sliced = share_claim(server.kube, "sliced", "s2", "50", time_slicing("Short"))
            _prepared(plugin, server.kube.get(RESOURCE_CLAIMS, sliced.name, namespace="ns"))
        finally:
            kubelet.close()
        host.remove_device(CARD_B)  # unplugged; no uevent reaches the agent here: two scans tell
        gone = physical_gpu_name(NODE, CARD_B)
        wait_for(
            lambda: gone not in {o["metadata"]["name"] for o in server.kube.list(PHYSICAL_GPUS).items},
            timeout=TIMEOUT,
            what="the unplugged card's PhysicalGPU deleted",
        )
        for component, process in processes.items():
            assert process.poll() is None, f"{component} exited with {process.returncode}"
        for component, process in processes.items():
            _stop(process)
            assert process.returncode == 0, f"{component} exited with {process.returncode} on SIGTERM"
        return AccessLog.of(server.requests)


def _driver_ready(server: FakeApiServer) -> bool:
    try:
        return all(_conditions(server, card).get("DriverReady") == "True" for card in (CARD_A, CARD_B))
    except NotFound:  # gpu-node-agent has not created them yet
        return False
