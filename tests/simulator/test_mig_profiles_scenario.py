# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MIG profile policy in the simulator: a scenario's ``settings.migProfiles`` (the shape of the
ModuleConfig's ``dra.migProfiles``) decides which MIG offers each simulated node publishes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deckhouse_gpu.simulator.scenario import ScenarioError, parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster
from testkit.waiting import wait_for

SCENARIO = """
settings:
  healthGraceSeconds: 1
  heartbeatSeconds: 1
  migProfiles:
    - device: a30-pcie
      nodeSelector: {pool: inference}
      profiles: [1g.6gb]
    - device: a30-pcie
      profiles: [4g.24gb]
nodes:
  - name: plain
    gpus: [{model: a30, address: "0000:17:00.0"}]
  - name: inference
    gpus: [{model: a30, address: "0000:17:00.0"}]
steps:
  - title: The second node joins the inference pool
    labelNode: {node: inference, labels: {pool: inference}}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(parse_scenario("mig-profiles", SCENARIO)) as cluster:
        cluster.settle()
        yield cluster


def offered(cluster: SimulatedCluster, node: str) -> set[str]:
    return {
        (device["attributes"].get("migProfile") or {}).get("string", "whole")
        for item in cluster.resource_slices()
        if item["spec"]["nodeName"] == node
        for device in item["spec"].get("devices") or []
    }


def test_each_node_offers_the_profiles_of_its_rule(cluster: SimulatedCluster) -> None:
    wait_for(lambda: offered(cluster, "plain") == {"whole", "4g.24gb"}, 10.0, "the general rule")
    assert offered(cluster, "inference") == {"whole", "4g.24gb"}
    cluster.apply(cluster.scenario.steps[0])
    # Republished on the label change, by the handler's own Node watch.
    wait_for(lambda: offered(cluster, "inference") == {"whole", "1g.6gb"}, 10.0, "the inference rule")
    assert offered(cluster, "plain") == {"whole", "4g.24gb"}


def test_a_malformed_rule_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"settings\.migProfiles\[0\]\.profiles"):
        parse_scenario("bad", "settings: {migProfiles: [{device: a30-pcie, profiles: [big]}]}\nnodes: []")
