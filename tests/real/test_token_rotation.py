# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A component in a pod keeps working when the kubelet rotates its token: gpu-node-agent's
production entry point on the in-cluster configuration (testkit/in_cluster.py), its token file
from the TokenRequest API with the shortest expiry the server allows, bound to a Pod on the node.
The file gets a token bound to a new Pod and the old Pod is deleted, so the real API server
refuses the old token at once; a card deleted behind the agent's back must still come back, with
no restart. (chaos-real's ``token-rotation`` does the same to all four components through a
kubeconfig's ``tokenFile``.)"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.in_cluster import launcher_argv
from testkit.real_cluster import Clusters, launch
from testkit.rotating_tokens import RotatingTokens
from testkit.waiting import free_port
from tests.e2e.sim_node import build_host
from tests.real.component_world import (
    CARDS,
    NAMESPACE,
    NODE_AGENT,
    PHYSICAL_GPUS,
    REPO,
    Component,
    add_node,
    card_name,
    delete_node_objects,
    install_access,
    unique,
)
from tests.real.conftest import cluster_of


@pytest.fixture
def short_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="tok"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_pod_component_keeps_working_on_its_rotated_token(clusters: Clusters, short_dir: Path) -> None:
    cluster = cluster_of(clusters, "1.36")
    install_access(cluster)
    node = unique("tok-node")
    add_node(cluster, node)
    tokens = RotatingTokens(cluster, short_dir / "tokens", NAMESPACE)
    account = short_dir / "serviceaccount"  # what the kubelet mounts into the pod
    account.mkdir()
    (account / "ca.crt").write_bytes(cluster.pki.ca.read_bytes())
    tokens.issue(NODE_AGENT, node, account / "token")
    old_token = (account / "token").read_text()
    root = build_host(short_dir / "h").root
    probes, metrics = free_port(), free_port()
    argv = ["--node-name", node, "--host-root", str(root)]
    argv += [f"--health-address=127.0.0.1:{probes}", f"--metrics-address=127.0.0.1:{metrics}"]
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(cluster.port)}
    env |= {"POD_NAMESPACE": NAMESPACE, "LOG_LEVEL": "info"}
    process = launch(
        NODE_AGENT,
        [sys.executable, *launcher_argv("gpu_node_agent", account, argv)],
        short_dir / "logs",
        REPO,
        env,
    )
    agent = Component(process, probes, metrics)
    names = {card_name(node, address) for address in CARDS}

    def cards() -> set[str]:
        listed = cluster.request("GET", f"{PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={node}")
        return {item["metadata"]["name"] for item in listed["items"]}

    try:
        agent.wait_for(lambda: cards() == names, 60, "the node's PhysicalGPUs")
        tokens.rotate(NODE_AGENT)
        own_cards = f"{PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={node}"
        # The old token's Pod is gone: refused from now on, once the API server's cache of
        # authenticated tokens (10 s) let go of it.
        cluster.wait_for(
            lambda: cluster.as_token(old_token, "GET", own_cards)[0] == 401, 30, "old token refused"
        )
        cluster.request("DELETE", f"{PHYSICAL_GPUS}/{card_name(node, CARDS[0])}")
        # Within the minute the agent still holds the old token: its write is refused (401),
        # it reads the file again, and its retry goes through.
        agent.wait_for(lambda: cards() == names, 90, "the deleted card written back on the new token")
        assert agent.process.alive()
    finally:
        agent.stop()
        delete_node_objects(cluster, node)
