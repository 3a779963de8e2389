# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The real gpu-node-agent process: kubernetes client, HTTP watch, health endpoint, SIGTERM."""

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig
from testkit.waiting import free_port, wait_for

# A process's cold start (the kubernetes client's import among it) takes seconds on a loaded machine.
START_SECONDS = 30.0


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        fake.kube.create(NODES, {"metadata": {"name": "w1"}})
        yield fake


def start_agent(
    host: HostBuilder, server: FakeApiServer, tmp_path: Path, port: int, metrics_port: int = 0
) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "deckhouse_gpu.cmd.gpu_node_agent",
        "--node-name", "w1",
        "--host-root", str(host.root),
        "--kubeconfig", write_kubeconfig(tmp_path, server.url),
        "--health-address", f"127.0.0.1:{port}",
        "--metrics-address", f"127.0.0.1:{metrics_port}",
    ]  # fmt: skip
    return subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env={**os.environ, "LOG_LEVEL": "info"})


def test_agent_process_inventories_recreates_and_stops_cleanly(host, server, tmp_path):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("a30", "0000:31:00.0")
    port, metrics_port = free_port(), free_port()
    agent = start_agent(host, server, tmp_path, port, metrics_port)
    try:
        wait_for(lambda: readyz(port) == 200, timeout=START_SECONDS)
        names = {o["metadata"]["name"] for o in server.kube.list(PHYSICAL_GPUS).items}
        assert names == {"w1-0000-17-00-0", "w1-0000-31-00-0"}
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=1) as response:
            metrics = response.read().decode()  # its own address, which kube-rbac-proxy fronts
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1)
        assert refused.value.code == 404  # never on the probe address, which the pod network reaches
        assert re.search(r'^d8_gpu_node_agent_scans_total\{result="success"\} [1-9]', metrics, re.M)
        assert 'd8_gpu_node_agent_api_writes_total{resource="PhysicalGPU"}' in metrics
        node_uid = server.kube.get(NODES, "w1")["metadata"]["uid"]
        stored = server.kube.get(PHYSICAL_GPUS, "w1-0000-17-00-0")
        assert stored["metadata"]["ownerReferences"][0]["uid"] == node_uid
        assert stored["status"]["pciInfo"]["device"]["name"] == "GA100GL [A30 PCIe]"
        patches = [r for r in server.requests if r.method == "PATCH"]
        assert patches
        assert all(r.content_type == "application/merge-patch+json" for r in patches)

        old_uid = stored["metadata"]["uid"]
        server.kube.delete(PHYSICAL_GPUS, "w1-0000-17-00-0")  # the HTTP watch must bring it back
        wait_for(lambda: _uid(server, "w1-0000-17-00-0") not in (None, old_uid))
    finally:
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=10)
    assert agent.returncode == 0
    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    messages = [entry["msg"] for entry in logs]
    assert "started" in messages
    assert messages[-1] == "stopped"
    assert all(entry["component"] == "gpu-node-agent" for entry in logs)


def test_agent_is_unready_while_the_api_fails(host, server, tmp_path):
    host.add_gpu("a30", "0000:17:00.0")
    server.fail_next(503, "ServiceUnavailable", times=1000)
    port = free_port()
    agent = start_agent(host, server, tmp_path, port)
    try:
        wait_for(lambda: readyz(port) == 503, timeout=START_SECONDS)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
            assert response.status == 200  # failing for seconds, not minutes: no restart yet
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=10)
    assert agent.returncode == 0


def _uid(server: FakeApiServer, name: str) -> str | None:
    items = [o for o in server.kube.list(PHYSICAL_GPUS).items if o["metadata"]["name"] == name]
    return items[0]["metadata"]["uid"] if items else None
