# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent as a process in a pod: no kubeconfig, the in-cluster environment (the service
account's token and CA, KUBERNETES_SERVICE_HOST/PORT), an API server over HTTPS, and a token the
kubelet rotates while the agent runs."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.fake_apiserver import FakeApiServer
from testkit.in_cluster import launcher_argv, service_account
from testkit.waiting import free_port, wait_for
from tests.adapters.process.admission_tls import issue
from tests.cmd.test_node_agent_process import START_SECONDS, readyz

CARD = "w1-0000-17-00-0"


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path, dict[str, str]]]:
    """The API server over TLS, the pod's service account directory and the pod's environment."""
    issued = issue("kubernetes.default.svc")
    (tmp_path / "server.crt").write_bytes(issued.crt)
    (tmp_path / "server.key").write_bytes(issued.key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    account = service_account(tmp_path / "serviceaccount", issued.ca, "gpu-node-agent")
    with FakeApiServer(tls=context) as server:
        server.kube.create(NODES, {"metadata": {"name": "w1"}})
        host, _, port = server.url.removeprefix("https://").rpartition(":")
        # A clean environment but for what a pod has: no KUBECONFIG to fall back on.
        env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
        env |= {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "LOG_LEVEL": "info"}
        yield server, account, env


def tokens(server: FakeApiServer) -> list[str]:
    return [(request.authorization or "").partition(" ")[2] for request in server.requests]


def test_the_agent_runs_on_its_service_account_and_follows_a_rotated_token(host: HostBuilder, pod) -> None:
    server, account, env = pod
    host.add_gpu("a30", "0000:17:00.0")
    port = free_port()
    argv = ["--node-name", "w1", "--host-root", str(host.root), "--resync-seconds", "0.3",
            "--health-address", f"127.0.0.1:{port}", "--metrics-address", "127.0.0.1:0"]  # fmt: skip
    agent = subprocess.Popen(
        [sys.executable, *launcher_argv("gpu_node_agent", account, argv)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for(lambda: readyz(port) == 200, timeout=START_SECONDS)
        assert server.kube.get(PHYSICAL_GPUS, CARD)["status"]["pciInfo"]["address"] == "0000:17:00.0"
        assert set(tokens(server)) == {"gpu-node-agent"}

        # The kubelet writes a new token and the old one expires: the server refuses it from now on.
        # An idle agent sends nothing (its watch, authenticated when it opened, stays open), so the
        # new token is read when a request is refused (a 401) or when the client's minute is up.
        (account / "token").write_text("gpu-node-agent-rotated")
        server.revoke("gpu-node-agent")

        # A card deleted now is written back, with the new token; at most one write goes out with
        # the old one first, is refused, and is retried after the token was read again.
        seen = len(server.requests)
        server.kube.delete(PHYSICAL_GPUS, CARD)
        wait_for(lambda: CARD in {o["metadata"]["name"] for o in server.kube.list(PHYSICAL_GPUS).items}, 15)
        later = list(zip(server.requests[seen:], tokens(server)[seen:], strict=True))
        created = [
            token for request, token in later if request.method == "POST" and "physicalgpus" in request.path
        ]
        assert created[-1] == "gpu-node-agent-rotated"
        assert created.count("gpu-node-agent") <= 1
        wait_for(lambda: readyz(port) == 200, timeout=15)
    finally:
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=10)
    assert agent.returncode == 0, stderr[-2000:]
    messages = [json.loads(line)["msg"] for line in stderr.splitlines() if line.startswith("{")]
    assert messages[-1] == "stopped"
