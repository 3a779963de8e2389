# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A small GPU cluster with the module's metric sources running, for the check of the alert rules
and dashboards against a real Prometheus.

The cluster (a fake API server in front of realistic objects): node ``h100`` with three H100s, one
whole card and two MIG instances allocated and prepared and one card whose NVML fails; node
``a100`` sharing its card, two shares taken (namespaces ml and lab); node ``a30`` with a free
card; node ``t4`` without a driver validator, so its driver is not ready. The sources: the real
gpu-controller and gpu-dra-controller processes against that API server, one dcgm-exporter stand-in per node
(tests/support/dcgm_fixture.py), and per node gpu-node-agent's and (where the driver is ready)
gpu-handler's metrics from their own services run on a simulated node of the same cards
(tests/support/node_metrics_world.py). Each dcgm-exporter stand-in reports what gpu-handler's node
holds (card UUIDs, MIG instance IDs); the whole card of ml/big is idle (IDLE_UTILIZATION), the
shared card of a100 busy (SHARED_UTILIZATION).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.allocation.metrics import MIG_MARK
from deckhouse_gpu.ports.controller_resources import LEASES, PODS
from deckhouse_gpu.ports.kube import EVENTS, PHYSICAL_GPUS, RESOURCE_CLAIMS
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import RESOURCES, GpuCluster
from testkit.kubeconfig import write_kubeconfig
from testkit.waiting import free_port
from tests.support import dcgm_fixture, node_metrics_world
from tests.support.controller_objects import add_pod, crashing_status, ready_status, set_pod_status
from tests.support.prometheus_server import Target

NAMESPACE = "d8-gpu"
VALIDATED_NODES = ("h100", "a100", "a30")
UNHEALTHY_CARD = "h100-0000-20-00-0"
CLAIMS_NAMESPACE = "ml"
IDLE_CARD = ("h100", node_metrics_world.addresses(3)[1])  # node_metrics_world prepares ml/big there
IDLE_UTILIZATION = 2.0
SHARED_UTILIZATION = 60.0


def build() -> GpuCluster:
    cluster = GpuCluster()
    cluster.node("h100", "h100-80gb", 3)
    cluster.node("a100", "a100-40gb", 1, {"gpu.deckhouse.io/sharing": "true"})
    cluster.node("a30", "a30", 1)
    cluster.node("t4", "t4", 1)
    cluster.publish()
    cluster.classes()
    cluster.claim(
        CLAIMS_NAMESPACE, "small", "gpu-h100-80gb-mig-1g.10gb", 2, node="h100", pod="train", prepared=True
    )
    cluster.claim(CLAIMS_NAMESPACE, "big", "gpu-h100-80gb", 1, node="h100", pod="big", prepared=True)
    cluster.claim(
        CLAIMS_NAMESPACE, "notebook", "gpu-a100-40gb-shared", 1, node="a100", pod="notebook", share="25"
    )
    cluster.claim("lab", "lab", "gpu-a100-40gb-shared", 1, node="a100", pod="lab", share="50")
    card = cluster.kube.get(PHYSICAL_GPUS, UNHEALTHY_CARD)
    conditions = [
        {**c, "status": "Unknown", "reason": "NVMLQueryFailed", "message": "GPU is lost"}
        if c["type"] == "HardwareHealthy"
        else c
        for c in card["status"]["conditions"]
    ]
    cluster.kube.patch(
        PHYSICAL_GPUS, UNHEALTHY_CARD, {"status": {"conditions": conditions}}, subresource="status"
    )
    for node in VALIDATED_NODES:
        add_pod(cluster.kube, f"validator-{node}", node, ready_status())
    return cluster


def mig_devices(cluster: GpuCluster, node: str) -> list[str]:
    """The MIG devices allocated from the node's pool (device names repeat across nodes)."""
    return [
        result["device"]
        for claim in cluster.kube.list(RESOURCE_CLAIMS).items
        for result in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
            "results", ()
        )
        if MIG_MARK in result["device"] and result["pool"] == f"gpus/{node}"
    ]


def _process(module: str, *argv: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", module, *argv], stdout=out, stderr=subprocess.STDOUT)


@contextlib.contextmanager
def running(cluster: GpuCluster, workdir: Path) -> Iterator[list[Target]]:
    """Starts the API server, both controllers and the DCGM stand-ins; yields their scrape targets,
    labelled as Deckhouse's Prometheus labels the module's ServiceMonitors' targets."""
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(FakeApiServer(cluster.kube, (*RESOURCES, LEASES, EVENTS)))
        kubeconfig = write_kubeconfig(workdir, server.url)
        # Prometheus scrapes each controller's /metrics address (in a cluster, the loopback one its
        # pod's kube-rbac-proxy fronts); the probe address is another port.
        ports = {"gpu-controller": free_port(), "gpu-dra-controller": free_port()}
        common = ("--kubeconfig", kubeconfig, "--namespace", NAMESPACE, "--listen-address", "127.0.0.1:0")
        processes = [
            _process(
                "deckhouse_gpu.cmd.gpu_controller", *common,
                "--metrics-address", f"127.0.0.1:{ports['gpu-controller']}",
                log=workdir / "gpu-controller.log",
            ),
            _process(
                "deckhouse_gpu.cmd.gpu_dra_controller.main", "run", *common,
                "--metrics-address", f"127.0.0.1:{ports['gpu-dra-controller']}",
                "--no-webhook", "--k8s-version", "1.35",
                log=workdir / "gpu-dra-controller.log",
            ),
        ]  # fmt: skip
        for process in processes:
            stack.callback(_stop, process)
        targets = [
            Target(job, f"127.0.0.1:{port}", {"namespace": NAMESPACE, "pod": f"{job}-0"})
            for job, port in ports.items()
        ]
        node_targets, held = stack.enter_context(node_metrics_world.serving(workdir / "nodes", NAMESPACE))
        cards = cluster.kube.list(PHYSICAL_GPUS).items
        for node in ("h100", "a100", "a30", "t4"):
            hardware = held.get(node) or node_metrics_world.Hardware()
            busy = {IDLE_CARD[1]: IDLE_UTILIZATION} if node == IDLE_CARD[0] else {}
            if node == "a100":
                busy = dict.fromkeys(node_metrics_world.addresses(1), SHARED_UTILIZATION)
            devices = list(hardware.mig_instances) if node in held else mig_devices(cluster, node)
            found = dcgm_fixture.node_cards(
                node, cards, devices, hardware.uuids, hardware.mig_instances, busy
            )
            exporter = dcgm_fixture.serve(dcgm_fixture.exposition(found))
            stack.callback(exporter.shutdown)
            labels = {"namespace": NAMESPACE, "pod": f"nvidia-dcgm-exporter-{node}", "node": node}
            targets.append(Target("nvidia-dcgm-exporter", f"127.0.0.1:{exporter.server_address[1]}", labels))
        yield targets + node_targets


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def churn(cluster: GpuCluster) -> None:
    """Work for the components while Prometheus watches: the validator of node a30 fails and
    recovers (gpu-controller passes), and a Pod created on node a30 needs its claim allocated
    (gpu-dra-controller)."""
    set_pod_status(cluster.kube, "validator-a30", crashing_status("nvidia.ko not loaded"))
    request: dict[str, Any] = {"name": "gpu", "exactly": {"deviceClassName": "gpu-a30", "count": 1}}
    cluster.kube.create(
        RESOURCE_CLAIMS,
        {
            "metadata": {"name": "infer", "namespace": CLAIMS_NAMESPACE},
            "spec": {"devices": {"requests": [request]}},
        },
    )
    spec = {
        "nodeName": "a30",
        "containers": [{"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "infer"}],
    }
    cluster.kube.create(PODS, {"metadata": {"name": "infer", "namespace": CLAIMS_NAMESPACE}, "spec": spec})


def recover(cluster: GpuCluster) -> None:
    set_pod_status(cluster.kube, "validator-a30", ready_status())
