# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Another owner in the simulator (DESIGN.md D16): a scenario labels a node as node-manager's
NodeGroup.spec.gpu does; its cards' offers go, their OtherOwner condition and ``kubectl gpu
status`` say why, the other node keeps offering; the label removed, the offers come back."""

from __future__ import annotations

import time

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from deckhouse_gpu.simulator.scenario import parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster

SCENARIO = """
description: a node of node-manager's GPU node group, moved to the module and back
settings: {heartbeatSeconds: 0.5}
nodes:
  - name: managed
    gpus: [{model: t4, address: "0000:17:00.0"}]
  - name: migrated
    gpus: [{model: t4, address: "0000:17:00.0"}]
steps:
  - labelNode: {node: managed, labels: {node.deckhouse.io/device-gpu.config: Exclusive}}
  - labelNode: {node: managed, labels: {node.deckhouse.io/device-gpu.config: null}}
"""
WAIT = 20.0


def offering(cluster: SimulatedCluster) -> set[str]:
    return {s["spec"]["nodeName"] for s in cluster.resource_slices() if s["spec"].get("devices")}


def until(cluster: SimulatedCluster, nodes: set[str]) -> None:
    deadline = time.monotonic() + WAIT
    while offering(cluster) != nodes:
        assert time.monotonic() < deadline, offering(cluster)
        cluster.settle()


def owner(cluster: SimulatedCluster, node: str) -> tuple[str, str]:
    for card in cluster.api.list(PHYSICAL_GPUS).items:
        if card["status"]["nodeInfo"]["nodeName"] == node:
            found = conditions.find(card["status"].get("conditions"), "OtherOwner") or {}
            return str(found.get("status")), str(found.get("reason"))
    raise AssertionError(f"no card on {node}")


def test_a_node_manager_node_offers_nothing_until_it_leaves_the_group() -> None:
    with SimulatedCluster(parse_scenario("other-owner", SCENARIO)) as cluster:
        until(cluster, {"managed", "migrated"})
        cluster.apply(cluster.scenario.steps[0])
        until(cluster, {"migrated"})
        assert owner(cluster, "managed") == ("True", "NodeManagerGPU")
        assert owner(cluster, "migrated") == ("False", "NoOtherOwner")
        reasons = [e["reason"] for e in cluster.events() if e["reason"].startswith("OtherGPUOwner")]
        assert reasons == ["OtherGPUOwner"]
        cluster.apply(cluster.scenario.steps[1])
        until(cluster, {"managed", "migrated"})
        assert owner(cluster, "managed") == ("False", "NoOtherOwner")
