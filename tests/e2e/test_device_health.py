# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Device health in Pod status, end to end in one process: a card's NVML breaks and is repaired.

gpu-handler's parts as ``gpu-handler run`` wires them (the handler loop with its capabilities pass
on the simulated NVML, the device health board, the real prepare service and the kubelet plugin on
real Unix sockets), and a fake kubelet that registers the plugin, prepares a Pod's MIG claim and
watches the health stream as a kubelet does: the 1.36 way (v1alpha1 on every plugin) and the
negotiated way (the newest version the plugin lists). In one process, so that the test can break
the simulated card's NVML.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.services.publishing.handler import HandlerSettings
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.prepare_world import NODE, PrepareWorld, allocate, build_world
from tests.e2e.health_node import health_node
from tests.support.fake_kubelet import FakeKubelet, PluginConnection
from tests.support.fake_kubelet_health import V1, V1ALPHA1, Report, watch_health

A30, T4 = "0000:17:00.0", "0000:b1:00.0"
POOL = f"gpus/{NODE}"
MIG_DEVICE = "gpu-0000-17-00-0-mig-1g-6gb-0"
WHOLE_A30, WHOLE_T4 = "gpu-0000-17-00-0", "gpu-0000-b1-00-0"
LOST = f"HardwareHealthy=Unknown (NVMLQueryFailed): {A30}: nvmlDeviceGetHandleByPciBusId failed: GPU is lost"
# No grace and fast retries, so a failure shows on the next heartbeat (a real node: 30 s of grace).
SETTINGS = HandlerSettings(
    heartbeat_seconds=0.1,
    health=HealthSettings(grace_seconds=0, backoff_seconds=(0.1,)),
    timing=LoopTiming(debounce_seconds=0.01, backoff_initial_seconds=0.1, backoff_max_seconds=0.5),
)


@dataclass
class Node:
    world: PrepareWorld
    nvml: SimulatedNVML
    plugin: RunningPlugin
    kubelet: FakeKubelet
    connection: PluginConnection


@pytest.fixture
def node() -> Iterator[Node]:
    short = Path(tempfile.mkdtemp(prefix="gpuh", dir="/tmp"))  # socket paths must fit 107 bytes
    world = build_world(short, {A30: "a30", T4: "t4"})
    try:
        with health_node(world, short, SETTINGS) as served:
            yield Node(world, world.nvml, served.plugin, served.kubelet, served.connection)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def health(report: Report, device: str) -> tuple[str, str]:
    seen = report[(POOL, device)]
    return seen.health, seen.message


@pytest.mark.parametrize("version", [V1ALPHA1, None], ids=["kubelet-1.36-v1alpha1", "negotiated-v1"])
def test_a_pods_mig_device_turns_unhealthy_when_its_card_is_lost_and_back(node, version):
    watch = watch_health(node.connection, version)
    try:
        assert watch.version == (version or V1)
        first = watch.until(lambda r: (POOL, MIG_DEVICE) in r)
        assert {seen.health for seen in first.values()} == {"Healthy"}
        assert {device for _, device in first} >= {WHOLE_A30, MIG_DEVICE, WHOLE_T4}

        # A Pod's claim gets a MIG instance of the A30, as the scheduler allocated it.
        claim = allocate(node.world.api, "c1", MIG_DEVICE)
        ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
        assert node.connection.prepare([ref])[ref.uid].error == ""

        node.nvml.fail_device(A30, "GPU is lost")
        broken = watch.until(lambda r: health(r, MIG_DEVICE)[0] == "Unhealthy")
        assert health(broken, MIG_DEVICE) == ("Unhealthy", LOST)
        assert health(broken, WHOLE_A30) == ("Unhealthy", LOST)
        assert health(broken, WHOLE_T4) == ("Healthy", "")  # the other card is untouched
        assert set(broken) == set(first)  # still the complete list

        node.nvml.clear_failures()
        repaired = watch.until(lambda r: health(r, MIG_DEVICE)[0] == "Healthy")
        assert {seen.health for seen in repaired.values()} == {"Healthy"}
        assert health(repaired, MIG_DEVICE) == ("Healthy", "")

        assert node.connection.unprepare([ref]) == {ref.uid: ""}
    finally:
        watch.close()
