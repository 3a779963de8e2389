# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu capacity says how many nodes publish counters and, on 1.34-1.36 once (nodes publishing
counters) x (nodes) passes 16 x 16, warns that every GPU Pod's scheduling pays for them
(docs/DRA.md, "Scale"); 1.37 does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.hooks.conftest  # noqa: F401 - hooks/ on the path, for lib.settings
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import RESOURCES, GpuCluster
from tests.cmd.kubectl_gpu_world import World, kubeconfig


def world(tmp_path: Path, minor: int, mig_nodes: int, plain_nodes: int = 2) -> tuple[GpuCluster, str]:
    cluster = GpuCluster(minor=minor)
    for index in range(mig_nodes):
        cluster.node(f"mig-{index:02d}", "a30", 1)
    for index in range(plain_nodes):
        cluster.node(f"t4-{index:02d}", "t4", 1)
    cluster.publish()
    cluster.classes()
    return cluster, str(tmp_path)


# With the two T4 nodes: 15 x 17 = 255 is within the budget, 16 x 18 = 288 is not.
@pytest.mark.parametrize(("minor", "mig_nodes", "warned"), [(35, 16, True), (36, 16, True), (35, 15, False)])
def test_past_the_threshold_a_paying_scheduler_is_warned_about(
    tmp_path: Path, minor: int, mig_nodes: int, warned: bool
) -> None:
    cluster, _ = world(tmp_path, minor, mig_nodes)
    with FakeApiServer(cluster.kube, RESOURCES) as server:
        run = World(cluster, server, kubeconfig(tmp_path, server.url))
        code, text = run.run("capacity")
        assert code == 0
        assert ("warning:" in text) == warned, text
        if warned:
            assert (
                f"{mig_nodes} of the cluster's {mig_nodes + 2} nodes publish counters (dynamic MIG)" in text
            )
            assert f"Kubernetes 1.{minor}" in text
            assert "dra.migOffers" in text
        else:
            assert f"{mig_nodes} nodes publish counters (dynamic MIG)." in text
        _, document = run.run("capacity", "-o", "json")
        found = json.loads(document)
        assert found["counterNodes"] == mig_nodes  # the T4 nodes have no MIG, so no counters
        assert (found["schedulerWarning"] is not None) == warned


def test_a_fixed_scheduler_is_not_warned_about(tmp_path: Path) -> None:
    cluster, _ = world(tmp_path, 37, 20)
    with FakeApiServer(cluster.kube, RESOURCES) as server:
        code, text = World(cluster, server, kubeconfig(tmp_path, server.url)).run("capacity")
    assert code == 0
    assert "warning:" not in text
    assert "20 nodes publish counters (dynamic MIG)." in text


def test_the_warning_and_the_module_switch_at_the_same_budget() -> None:
    """The hooks run without the module's package, so each side keeps the number; they must agree."""
    from lib.settings import MIG_OFFERS_BUDGET  # noqa: PLC0415 - tests/hooks/conftest puts hooks/ on the path

    from deckhouse_gpu.domain.report.scheduler_cost import BUDGET  # noqa: PLC0415

    assert BUDGET == MIG_OFFERS_BUDGET
