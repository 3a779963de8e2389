# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated GPU nodes on a real API server: per node, a real ``gpu-node-agent`` and a real
``gpu-handler run`` process (simulated host and NVML, no kubelet plugin), each behind a counting
proxy of its own (testkit/counting_proxy.py), so that every request of every component is
attributed. The real tier's idle-load test and ``make bench``'s API-load run start them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.counting_proxy import CountingProxy, Record
from testkit.real_cluster import ApiError, RealCluster

REPO = Path(__file__).resolve().parents[1]
PHYSICAL_GPU = "gpu.deckhouse.io/v1alpha1"
CARDS = ("0000:17:00.0", "0000:31:00.0")


def install_crd(cluster: RealCluster, path: Path = REPO / "crds" / "physicalgpu.yaml") -> None:
    crd = next(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    cluster.apply(crd)

    def established() -> bool:
        found = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (found.get("status") or {}).get("conditions") or []
        )

    cluster.wait_for(established, 60, f"CRD {crd['metadata']['name']}")


def install_crds(cluster: RealCluster) -> None:
    """Every CRD of the module, as Deckhouse applies them (crds/, but doc- and _ files)."""
    for path in sorted((REPO / "crds").glob("*.yaml")):
        if not path.name.startswith(("doc-", "_")):
            install_crd(cluster, path)


def _ready(cluster: RealCluster, node: str) -> bool:
    """DriverReady on the node's cards, as gpu-controller writes it from the validator Pod."""
    condition = {"type": "DriverReady", "status": "True", "reason": "ValidatorReady", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    for address in CARDS:
        name = physical_gpu_name(node, address)
        try:
            card = cluster.get(PHYSICAL_GPU, "PhysicalGPU", name)
        except Exception:  # not created yet by the agent
            return False
        conditions = [
            c for c in (card.get("status") or {}).get("conditions") or [] if c["type"] != "DriverReady"
        ]
        cluster.request(
            "PATCH",
            f"/apis/{PHYSICAL_GPU}/physicalgpus/{name}/status",
            {"status": {"conditions": [*conditions, condition]}},
            content_type="application/merge-patch+json",
        )
    return True


@dataclass
class SimulatedNode:
    """One node: its agent and handler processes and the proxy in front of each."""

    cluster: RealCluster
    name: str
    directory: Path
    heartbeat_seconds: float = 60.0
    resync_seconds: float = 600.0
    proxies: dict[str, CountingProxy] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self) -> SimulatedNode:
        self.cluster.add_node(self.name)
        host = (
            HostBuilder(self.directory / "host")
            .standard_node()
            .install_nvidia_driver("8a1f0e2d-7c3b-4d5e-9f6a-1b2c3d4e5f60")
        )
        for card in CARDS:
            host.add_gpu("a30", card, "nvidia")
        for component in ("gpu-node-agent", "gpu-handler"):
            proxy = CountingProxy(self.cluster.server, self.cluster.ssl_context()).start()
            self.proxies[component] = proxy
        common = ["--node-name", self.name, "--host-root", str(host.root)]
        common += ["--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]
        agent = ["deckhouse_gpu.cmd.gpu_node_agent", *common, "--resync-seconds", str(self.resync_seconds)]
        self._run("gpu-node-agent", agent)
        self.cluster.wait_for(lambda: _ready(self.cluster, self.name), 120, f"the cards of {self.name}")
        whole_card_class(self.cluster)  # gpu-handler publishes what some class may select (DESIGN.md D19)
        handler = [
            "deckhouse_gpu.simulator.gpu_handler",
            "run",
            *common,
            "--nvml-sim",
            "a30,a30",
            "--no-kubelet-plugin",
        ]
        self._run("gpu-handler", [*handler, "--heartbeat-seconds", str(self.heartbeat_seconds)])
        return self

    def _run(self, component: str, argv: list[str]) -> None:
        kubeconfig = self.proxies[component].kubeconfig(self.directory / f"{component}.kubeconfig")
        log = (self.directory / f"{component}.log").open("wb")
        self.processes[component] = subprocess.Popen(
            [sys.executable, "-m", *argv, "--kubeconfig", str(kubeconfig)],
            cwd=REPO,
            stdout=log,
            stderr=log,
            env={**os.environ, "LOG_LEVEL": "warning"},
        )

    def add_validator(self, namespace: str) -> None:
        """The driver validator's Pod on this node, Running and Ready, as the kubelet would report
        it: what gpu-controller reads to keep DriverReady True."""
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"validator-{self.name}", "namespace": namespace,
                         "labels": {"app": "nvidia-driver-validator"}},
            "spec": {"nodeName": self.name,
                     "containers": [{"name": "validator", "image": "registry.example/v:1"}]},
        }  # fmt: skip
        self.cluster.create(pod)
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                  "containerStatuses": [{"name": "validator", "ready": True, "restartCount": 0,
                                         "image": "registry.example/v:1", "imageID": "", "started": True,
                                         "state": {"running": {}}}]}  # fmt: skip
        self.cluster.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )

    def slices(self) -> list[dict[str, Any]]:
        path = f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D{self.name}"
        return list(self.cluster.request("GET", path).get("items") or [])

    def records(self, since: float = 0.0) -> dict[str, list[Record]]:
        return {component: proxy.since(since) for component, proxy in self.proxies.items()}

    def log(self, component: str) -> str:
        return (self.directory / f"{component}.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        for proxy in self.proxies.values():
            proxy.stop()
        with contextlib.suppress(Exception):  # best effort: the cluster may be going too
            self.cluster.delete("v1", "Node", self.name)


def start_nodes(cluster: RealCluster, count: int, prefix: str, **settings: Any) -> list[SimulatedNode]:
    base = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    nodes = []
    for index in range(count):
        directory = base / str(index)
        directory.mkdir()
        nodes.append(SimulatedNode(cluster, f"{prefix}-{index}", directory, **settings).start())
    return nodes


def wait_quiet(nodes: list[SimulatedNode], quiet_seconds: float, timeout: float) -> float:
    """Waits until no component has sent anything but watches for ``quiet_seconds``; the moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = time.monotonic()
        recent = [
            r
            for node in nodes
            for rs in node.records(now - quiet_seconds).values()
            for r in rs
            if r.verb != "WATCH"
        ]
        if not recent:
            return now
        time.sleep(0.5)
    raise TimeoutError(f"the node components never went quiet for {quiet_seconds} s")


def requests_of(records: list[Record], keep: Callable[[Record], bool] = lambda r: True) -> list[str]:
    return [
        f"{r.verb} {r.path}?{'&'.join(f'{k}={v}' for k, v in sorted(r.query.items()))}"
        for r in records
        if keep(r)
    ]


WHOLE_CARD_CLASS = "node-components-whole-card"


def whole_card_class(cluster: RealCluster, name: str = WHOLE_CARD_CLASS, *, exist_ok: bool = True) -> None:
    """A DeviceClass of the module's whole cards (deviceType Physical): without any class
    gpu-handler offers nothing. ``exist_ok``: made by an earlier node of the same cluster."""
    selector = (
        'device.driver == "gpu.deckhouse.io"'
        ' && device.attributes["gpu.deckhouse.io"].deviceType == "Physical"'
    )
    try:
        cluster.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": selector}}]},
            }
        )
    except ApiError as error:
        if error.status != 409 or not exist_ok:
            raise
