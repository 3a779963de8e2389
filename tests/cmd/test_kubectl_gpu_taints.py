# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu on a node where a card is unhealthy and its offers are published tainted: status
says so, capacity does not count it, explain names the taint."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import RESOURCES, GpuCluster
from tests.cmd.kubectl_gpu_world import World, kubeconfig

TAINT = "gpu.deckhouse.io/unhealthy=GPULost:NoExecute"
LOST = "0000:18:00.0"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    cluster = GpuCluster()
    cards = cluster.node("h100", "h100-80gb", 2)
    (health,) = [c for c in cards[1]["status"]["conditions"] if c["type"] == "HardwareHealthy"]
    health.update(status="Unknown", reason="NVMLQueryFailed", message=f"{LOST}: GPU is lost")
    name = cards[1]["metadata"]["name"]
    cluster.kube.patch(PHYSICAL_GPUS, name, {"status": cards[1]["status"]}, subresource="status")
    cluster.publish()  # as gpu-handler publishes while the API server keeps taints
    cluster.classes()
    cluster.claim("ml", "two", "gpu-h100-80gb", 2)
    cluster.pod("ml", "wants-two", [("gpu", "two", None)])
    with FakeApiServer(cluster.kube, RESOURCES) as server:
        yield World(cluster, server, kubeconfig(tmp_path, server.url, namespace="ml"))


def _rows(table: str) -> list[list[str]]:
    return [re.split(r"\s{3,}", line.strip()) for line in table.strip().splitlines()]


def test_status_shows_the_tainted_card_as_such(world: World) -> None:
    code, out = world.run("status")
    assert code == 1  # a card is not healthy
    by_card = {r[1]: r for r in _rows(out)[1:]}
    assert by_card[LOST][3:7] == ["idle", "Unknown", "True", f"tainted {TAINT}"]
    assert by_card["0000:10:00.0"][6].startswith("8/8 slices")  # the healthy card: all free
    code, out = world.run("status", "-o", "json")
    cards = {c["address"]: c for c in json.loads(out)["cards"]}
    assert (cards[LOST]["offered"], cards[LOST]["taints"]) == (True, [TAINT])
    assert cards["0000:10:00.0"]["taints"] == []


def test_capacity_counts_no_tainted_device(world: World) -> None:
    _, out = world.run("capacity", "-o", "json")
    classes = {c["class"]: c for c in json.loads(out)["classes"]}
    assert classes["gpu-h100-80gb"]["fits"] == 1  # only the healthy card
    assert classes["gpu-h100-80gb-mig-1g.10gb"]["fits"] == 7  # its MIG instances, not the other's


def test_explain_names_the_taint(world: World) -> None:
    code, out = world.run("explain", "wants-two")
    assert code == 1
    assert "taint gpu.deckhouse.io/unhealthy=GPULost:NoExecute not tolerated" in out
