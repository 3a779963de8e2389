# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``breakNvml`` in the simulator with the DRADeviceTaints gate of its API server on and off: the
lost card's devices stay published, tainted, or are withdrawn with one Event; repair undoes it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from deckhouse_gpu.simulator.scenario import ScenarioError, parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster
from deckhouse_gpu.simulator.taints import TaintWatch

LOST, OTHER = "0000:17:00.0", "0000:31:00.0"
SCENARIO = """
description: two T4s, one lost and repaired
settings: {{healthGraceSeconds: 0.2, heartbeatSeconds: 0.5, featureGates: {{DRADeviceTaints: {gate}}}}}
nodes:
  - name: worker-1
    gpus:
      - {{model: t4, address: "{lost}"}}
      - {{model: t4, address: "{other}"}}
steps:
  - breakNvml: {{node: worker-1, address: "{lost}", failure: lost}}
  - repairNvml: {{node: worker-1}}
"""
WAIT = 20.0


@contextmanager
def run(gate: bool) -> Iterator[SimulatedCluster]:
    text = SCENARIO.format(gate=str(gate).lower(), lost=LOST, other=OTHER)
    with SimulatedCluster(parse_scenario("taints", text)) as cluster:
        yield cluster


def offered(cluster: SimulatedCluster) -> dict[str, list[dict[str, str]]]:
    """PCI address -> the taints of its device, for every published card."""
    return {
        d["attributes"]["pciAddress"]["string"]: [
            {k: v for k, v in t.items() if k != "timeAdded"} for t in d.get("taints", [])
        ]
        for s in cluster.resource_slices()
        for d in s["spec"].get("devices", [])
    }


def until(cluster: SimulatedCluster, wanted: dict[str, list[dict[str, str]]]) -> None:
    deadline = time.monotonic() + WAIT
    while offered(cluster) != wanted:
        assert time.monotonic() < deadline, offered(cluster)
        cluster.settle()


def fallback_events(cluster: SimulatedCluster) -> list[str]:
    return [e["message"] for e in cluster.events() if e["reason"] == "DRAFeatureUnavailable"]


@pytest.mark.parametrize("gate", [True, False])
def test_break_and_repair_nvml(gate: bool) -> None:
    with run(gate) as cluster:
        watch = TaintWatch()
        assert offered(cluster) == {LOST: [], OTHER: []}
        assert watch.changes(cluster.resource_slices()) == []
        cluster.apply(cluster.scenario.steps[0])
        taint = {"key": "gpu.deckhouse.io/unhealthy", "value": "GPULost", "effect": "NoExecute"}
        until(cluster, {LOST: [taint], OTHER: []} if gate else {OTHER: []})
        lines = watch.changes(cluster.resource_slices())
        if gate:
            assert lines == [f"worker-1 card {LOST} tainted gpu.deckhouse.io/unhealthy=GPULost:NoExecute"]
            assert fallback_events(cluster) == []
        else:
            assert lines == []  # never tainted: the server dropped it, and the card was withdrawn
            (message,) = fallback_events(cluster)
            assert "DRADeviceTaints" in message
        cluster.apply(cluster.scenario.steps[1])
        until(cluster, {LOST: [], OTHER: []})
        assert watch.changes(cluster.resource_slices()) == (
            [f"worker-1 card {LOST} untainted"] if gate else []
        )
        assert len(fallback_events(cluster)) == (0 if gate else 1)


def test_taint_watch_says_when_a_tainted_card_is_no_longer_offered() -> None:
    def device(taints: list[dict[str, str]]) -> dict[str, object]:
        return {"name": "gpu-0000-17-00-0", "attributes": {"pciAddress": {"string": LOST}}, "taints": taints}

    def slices(*devices: dict[str, object]) -> list[dict[str, object]]:
        return [{"spec": {"driver": "gpu.deckhouse.io", "nodeName": "w1", "devices": list(devices)}}]

    watch = TaintWatch()
    taint = {"key": "gpu.deckhouse.io/unhealthy", "value": "NVMLQueryFailed", "effect": "NoSchedule"}
    assert watch.changes(slices(device([taint]))) == [
        f"w1 card {LOST} tainted gpu.deckhouse.io/unhealthy=NVMLQueryFailed:NoSchedule"
    ]
    assert watch.changes(slices(device([taint]))) == []
    was = "gpu.deckhouse.io/unhealthy=NVMLQueryFailed:NoSchedule"
    assert watch.changes(slices()) == [f"w1 card {LOST} no longer offered (was tainted {was})"]


def test_unknown_feature_gates_are_refused() -> None:
    with pytest.raises(ScenarioError, match="featureGates"):
        parse_scenario("x", "nodes: []\nsettings: {featureGates: {DRANoSuchGate: false}}\n")
    with pytest.raises(ScenarioError, match="featureGates"):
        parse_scenario("x", "nodes: []\nsettings: {featureGates: {DRADeviceTaints: 'off'}}\n")
    scenario = parse_scenario("x", "nodes: []\nsettings: {featureGates: {DRADeviceTaints: false}}\n")
    assert scenario.settings.gates_off == ("DRADeviceTaints",)
