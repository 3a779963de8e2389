# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's load on a real API server (issue 40), measured through a counting proxy per
component (testkit/counting_proxy.py), and extrapolated to 1,000 nodes.

1. Node components: ``BENCH_API_NODES`` simulated GPU nodes (default 10), each a real
   gpu-node-agent and a real gpu-handler process (two A30s, no kubelet plugin), beside a real
   gpu-controller and gpu-dra-controller. Requests per minute per component at idle, then under a
   stream of ResourceClaims created and deleted on another node; open watches per node; bytes each
   node's components receive.
2. gpu-dra-controller's memory with 1,000 and ``BENCH_API_PODS`` (default 30,000) Pods it does not act
   on (Pods no scheduler takes, ~1.5 KB each, as issue 40 measured): peak and settled RSS.

Printed, never asserted (docs/RELIABILITY.md and the scale section of docs/DRA.md carry the figures).
The machine is shared: CPU figures are the processes' own CPU time.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testkit.counting_proxy import CountingProxy, Record
from testkit.node_components import REPO, SimulatedNode, install_crds, start_nodes, wait_quiet
from testkit.real_cluster import RealCluster, real_cluster
from testkit.waiting import free_port

VERSION = os.environ.get("BENCH_API_VERSION", "1.36")
NODES = int(os.environ.get("BENCH_API_NODES", "10"))
IDLE_SECONDS = float(os.environ.get("BENCH_API_IDLE_SECONDS", "120"))
STREAM_SECONDS = float(os.environ.get("BENCH_API_STREAM_SECONDS", "60"))
PODS = [int(n) for n in os.environ.get("BENCH_API_PODS", "1000,30000").split(",") if n]
# client-go's and our watches last 5 to 10 minutes: a reconnect per watch every 7.5 min on average.
RECONNECTS_PER_WATCH_MINUTE = 1 / 7.5
NAMESPACE = "d8-gpu"


def _namespace(cluster: RealCluster, name: str) -> None:
    """A namespace and its default ServiceAccount (no controller-manager runs here to make it):
    Pods are admitted only once it exists."""
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": name},
    }
    cluster.ensure(account)


def _per_minute(records: list[Record], seconds: float, watches: bool = False) -> float:
    return sum(1 for r in records if (r.verb == "WATCH") == watches) * 60.0 / seconds


def _controller(
    cluster: RealCluster, directory: Path, name: str, argv: list[str]
) -> tuple[CountingProxy, Any]:
    proxy = CountingProxy(cluster.server, cluster.ssl_context()).start()
    kubeconfig = proxy.kubeconfig(directory / f"{name}.kubeconfig")
    log = (directory / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", *argv, "--kubeconfig", str(kubeconfig)],
        cwd=REPO,
        stdout=log,
        stderr=log,
        env={**os.environ, "LOG_LEVEL": "warning", "POD_NAME": name},
    )
    return proxy, process


def _claims(cluster: RealCluster, seconds: float) -> int:
    """Claims created and deleted on a node that is none of ours, for ``seconds``."""
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-claims"}})
    made, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        name = f"claim-{made}"
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "bench-claims"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-a30"}}]}},
        }
        cluster.create(claim)
        time.sleep(0.5)
        cluster.delete("resource.k8s.io/v1", "ResourceClaim", name, "bench-claims")
        made += 1
    return made


def node_load() -> None:
    print(f"\n== API load on a real {VERSION} API server: {NODES} simulated GPU nodes (machine shared) ==")
    with real_cluster(VERSION) as cluster:
        install_crds(cluster)
        _namespace(cluster, NAMESPACE)
        directory = Path(tempfile.mkdtemp(prefix="api-load-"))
        started = time.monotonic()
        nodes = start_nodes(cluster, NODES, "load")
        for node in nodes:
            node.add_validator(NAMESPACE)  # gpu-controller keeps DriverReady True from it
        controllers = {
            "gpu-controller": _controller(cluster, directory, "gpu-controller", [
                "deckhouse_gpu.cmd.gpu_controller", "--namespace", NAMESPACE,
                "--listen-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]),
            "gpu-dra-controller": _controller(cluster, directory, "gpu-dra-controller", [
                "deckhouse_gpu.cmd.gpu_dra_controller.main", "run", "--no-webhook", "--namespace", NAMESPACE,
                "--listen-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]),
        }  # fmt: skip
        try:
            for node in nodes:
                cluster.wait_for(node.slices, 300, f"slices of {node.name}")
            print(f"  {NODES} nodes started and published in {time.monotonic() - started:.0f} s")
            quiet = wait_quiet(nodes, quiet_seconds=5.0, timeout=300)
            before = _received(nodes, controllers)
            time.sleep(IDLE_SECONDS)
            _report("idle", nodes, controllers, quiet, IDLE_SECONDS, before)
            stream_from, before = time.monotonic(), _received(nodes, controllers)
            made = _claims(cluster, STREAM_SECONDS)
            took = time.monotonic() - stream_from
            what = f"a stream of {made} claims created and deleted"
            _report(what, nodes, controllers, stream_from, took, before)
        finally:
            for node in nodes:
                node.stop()
            for proxy, process in controllers.values():
                process.terminate()
                process.wait(15)
                proxy.stop()


def _received(
    nodes: list[SimulatedNode], controllers: dict[str, tuple[CountingProxy, Any]]
) -> dict[str, int]:
    """Bytes each component has received so far, summed over the nodes."""
    totals = {name: proxy.received() for name, (proxy, _) in controllers.items()}
    for node in nodes:
        for component, proxy in node.proxies.items():
            totals[component] = totals.get(component, 0) + proxy.received()
    return totals


def _report(
    what: str,
    nodes: list[SimulatedNode],
    controllers: dict[str, tuple[CountingProxy, Any]],
    since: float,
    seconds: float,
    before: dict[str, int],
) -> None:
    print(f"\n  {what}: {seconds:.0f} s")
    columns = ("requests/min", "of which LIST/GET", "watches opened/min", "KiB received/min")
    print(f"  {'component':<20} " + " ".join(f"{c:>18}" for c in columns))
    per_component: dict[str, list[list[Record]]] = {}
    for node in nodes:
        for component, records in node.records(since).items():
            per_component.setdefault(component, []).append(records)
    for component, proxy_process in controllers.items():
        per_component[component] = [proxy_process[0].since(since)]
    for component, runs in per_component.items():
        count = len(runs)
        flat = [r for records in runs for r in records]
        requests = _per_minute(flat, seconds) / count
        reads = sum(1 for r in flat if r.verb in ("LIST", "GET")) * 60.0 / seconds / count
        watches = _per_minute(flat, seconds, watches=True) / count
        received = (
            (_received(nodes, controllers)[component] - before[component]) / 1024 * 60.0 / seconds / count
        )
        label = f"{component}{' (per node)' if component.startswith(('gpu-node', 'gpu-handler')) else ''}"
        print(f"  {label:<20} {requests:>18.2f} {reads:>18.2f} {watches:>18.2f} {received:>18.1f}")
    open_watches = [sum(p.open_watches for p in node.proxies.values()) for node in nodes]
    print(f"  open watches per node: {min(open_watches)}-{max(open_watches)}")
    if what == "idle":
        _extrapolate(nodes, per_component, seconds, max(open_watches))


def _extrapolate(
    nodes: list[SimulatedNode], per_component: dict[str, list[list[Record]]], seconds: float, watches: int
) -> None:
    node_requests = sum(
        _per_minute([r for records in per_component[c] for r in records], seconds) / len(per_component[c])
        for c in ("gpu-node-agent", "gpu-handler")
    )
    reconnects = watches * RECONNECTS_PER_WATCH_MINUTE
    per_node = node_requests + reconnects
    print(
        f"  per node at idle: {node_requests:.2f} requests/min measured + {reconnects:.2f}/min of watch"
        f" reconnects ({watches} watches, each 5-10 min) = {per_node:.2f}/min"
    )
    print(
        f"  1,000 nodes: {per_node * 1000 / 60:.1f} requests/s from the node components, "
        f"{watches * 1000} open watches (kubelets' lease renewals alone: ~100/s)"
    )


def _rss(pid: int) -> tuple[float, float]:
    """(peak, current) resident memory of a process, MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmHWM", "VmRSS"))  # type: ignore[return-value]


def _create_pods(cluster: RealCluster, first: int, count: int) -> None:
    """Pods ``first`` to ``count`` - 1, which no scheduler takes (an unknown schedulerName), ~1.5 KB
    each, over kept-alive connections."""
    target = urlsplit(cluster.server)
    context: ssl.SSLContext = cluster.ssl_context()
    _namespace(cluster, "bench-pods")
    filler = {f"bench.example/note-{i}": "x" * 80 for i in range(10)}

    def worker(start: int) -> None:
        connection = http.client.HTTPSConnection(target.hostname or "", target.port, context=context)
        for index in range(first + start, count, 8):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{index}", "labels": {"app": "bench"}, "annotations": filler},
                "spec": {
                    "schedulerName": "nobody",
                    "containers": [{"name": "c", "image": "registry.example/app:1", "resources": {}}],
                },
            }
            connection.request(
                "POST",
                "/api/v1/namespaces/bench-pods/pods",
                json.dumps(pod),
                {"Content-Type": "application/json"},
            )
            answer = connection.getresponse()
            answer.read()
        connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
            return int(answer.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def controller_memory() -> None:
    print(f"\n== gpu-dra-controller memory vs Pods it does not act on (real {VERSION} API server) ==")
    print(
        f"  {'Pods':>7} {'create s':>9} {'sync s':>7} {'peak MiB':>9} {'settled MiB':>12} {'KiB listed':>11}"
    )
    have = 0
    with real_cluster(VERSION) as cluster:
        directory = Path(tempfile.mkdtemp(prefix="api-memory-"))
        for count in sorted(PODS):
            began = time.monotonic()
            _create_pods(cluster, have, count)
            have = count
            created = time.monotonic() - began
            port = free_port()
            proxy, process = _controller(cluster, directory, f"dra-{count}", [
                "deckhouse_gpu.cmd.gpu_dra_controller.main", "run", "--no-webhook", "--no-leader-elect",
                "--listen-address", f"127.0.0.1:{port}", "--metrics-address", "127.0.0.1:0"])  # fmt: skip
            started = time.monotonic()
            try:
                while not _ready(port):
                    if process.poll() is not None or time.monotonic() - started > 600:
                        raise RuntimeError((directory / f"dra-{count}.log").read_text()[-2000:])
                    time.sleep(0.2)
                synced = time.monotonic() - started
                time.sleep(5)
                peak, settled = _rss(process.pid)
                listed = sum(r.bytes for r in proxy.since(0) if r.verb == "LIST" and r.path.endswith("/pods"))
                figures = (
                    f"{created:>9.0f} {synced:>7.1f} {peak:>9.0f} {settled:>12.0f} {listed / 1024:>11.1f}"
                )
                print(f"  {count:>7} {figures}")
            finally:
                process.terminate()
                process.wait(15)
                proxy.stop()


def run() -> None:
    node_load()
    controller_memory()


if __name__ == "__main__":
    run()
