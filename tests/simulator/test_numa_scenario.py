# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``resource.kubernetes.io/numaNode`` end to end in the simulator: the NUMA node sysfs shows for a
card reaches its PhysicalGPU and every device gpu-handler publishes for it, on the newest known
Kubernetes; a virtual machine's card (sysfs -1) has no such attribute at all."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from deckhouse_gpu.simulator.cli import main, show_slices
from deckhouse_gpu.simulator.scenario import parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster

NUMA = "resource.kubernetes.io/numaNode"
SCENARIO = """
settings: {kubernetesVersion: "1.37", healthGraceSeconds: 1, heartbeatSeconds: 1}
nodes:
  - name: metal
    gpus:
      - {model: a30, address: "0000:17:00.0"}
      - {model: a30, address: "0000:b1:00.0"}
  - name: odd
    gpus:
      - {model: t4, address: "0000:17:00.0", numaNode: 3}
  - name: vm
    machine: vm
    gpus:
      - {model: t4, address: "0000:00:05.0"}
steps:
  - title: A card is hot-plugged into the second socket's bus
    addGpu: {node: odd, model: t4, address: "0000:ca:00.0"}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(parse_scenario("numa", SCENARIO)) as cluster:
        yield cluster


def published(cluster: SimulatedCluster, node: str) -> dict[str, Any]:
    """The numaNode attribute of each device the node publishes (None: the device has none)."""
    return {
        device["name"]: (device["attributes"].get(NUMA) or {}).get("int")
        for item in cluster.resource_slices()
        if item["spec"]["nodeName"] == node
        for device in item["spec"].get("devices") or []
    }


def card_numa(cluster: SimulatedCluster, node: str, address: str) -> Any:
    name = f"{node}-{address.replace(':', '-').replace('.', '-')}"
    return cluster.api.get(PHYSICAL_GPUS, name)["status"]["pciInfo"].get("numaNode")


def test_every_device_of_a_card_carries_its_numa_node(cluster: SimulatedCluster) -> None:
    assert card_numa(cluster, "metal", "0000:17:00.0") == 0
    assert card_numa(cluster, "metal", "0000:b1:00.0") == 1
    devices = published(cluster, "metal")
    low = {name: numa for name, numa in devices.items() if "0000-17-00-0" in name}
    high = {name: numa for name, numa in devices.items() if "0000-b1-00-0" in name}
    assert len(low) > 1
    assert len(high) > 1
    assert set(low.values()) == {0}
    assert set(high.values()) == {1}
    assert set(published(cluster, "odd").values()) == {3}  # what the scenario gave


def test_a_virtual_machines_card_has_no_numa_attribute(cluster: SimulatedCluster) -> None:
    assert card_numa(cluster, "vm", "0000:00:05.0") is None
    devices = published(cluster, "vm")
    assert devices
    assert set(devices.values()) == {None}


def test_a_hot_plugged_card_gets_its_numa_node_and_the_table_shows_it(cluster: SimulatedCluster) -> None:
    cluster.apply(cluster.scenario.steps[0])
    cluster.settle()
    assert card_numa(cluster, "odd", "0000:ca:00.0") == 1  # bus 0xca: the second socket
    assert set(published(cluster, "odd").values()) == {1, 3}
    out = io.StringIO()
    show_slices(cluster, out)
    lines = out.getvalue().splitlines()
    header = lines[1].split()
    numa = {line.split()[0]: line.split()[header.index("NUMA")] for line in lines[2:]}
    assert any(name.startswith("odd-") and value == "1,3" for name, value in numa.items()), numa
    assert all(value == "-" for name, value in numa.items() if name.startswith("vm-")), numa


def test_the_demo_runs_on_the_newest_known_version(tmp_path: Any) -> None:
    path = tmp_path / "numa.yaml"
    path.write_text(SCENARIO)
    out = io.StringIO()
    assert main(["--scenario", str(path)], out=out) == 0
    assert "NUMA" in out.getvalue()
