# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent's metrics move when their things happen: passes (scans) and their failures, udev
events by action, unreadable devices and failed PhysicalGPU writes, as ``gpu-node-agent`` wires them."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.metrics.api_write_metrics import MeteredKube
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from deckhouse_gpu.ports.kube import NODES, Unavailable
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import Trigger
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder

P = "d8_gpu_node_agent"


class Agent:
    def __init__(self, host: HostBuilder, clock: Any) -> None:
        self.kube = MemoryKube()
        self.kube.create(NODES, {"metadata": {"name": "w1"}})
        self.metrics = NodeAgentMetrics()
        api = MeteredKube(self.kube, self.metrics)
        events = EventRecorder(api, "gpu-node-agent", "w1", clock)
        sync = InventorySync(api, SysfsHost(host.root), "w1", events, absence_threshold=1)
        self.loop = NodeAgentLoop(sync, HealthState(), clock, LoopSettings(), observer=self.metrics)

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(f"{P}_{name}", labels) or 0.0


def test_each_pass_is_timed_and_counted_by_result(host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    agent = Agent(host, clock)
    assert agent.loop._pass([Trigger("start", "")]).ok
    assert agent.value("scans_total", result="success") == 1
    assert agent.value("scan_duration_seconds_count") == 1
    assert agent.value("api_writes_total", resource="PhysicalGPU") >= 1
    host.bus_devices.rename(host.bus_devices.with_name("gone"))  # the host cannot be read
    assert not agent.loop._pass([]).ok
    assert agent.value("scans_total", result="error") == 1
    assert agent.value("scan_duration_seconds_count") == 2


def test_failed_writes_count_by_resource_and_error(host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    agent = Agent(host, clock)
    agent.kube.fail_next("create", Unavailable("etcd timeout"))
    assert not agent.loop._pass([]).ok
    assert agent.value("api_write_errors_total", resource="PhysicalGPU", error="Unavailable") == 1
    assert agent.value("scans_total", result="error") == 1


def test_unreadable_devices_are_a_gauge_of_the_last_pass(host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    agent = Agent(host, clock)
    agent.loop._pass([])
    host.write_device_file("0000:17:00.0", "vendor", "garbage")
    agent.loop._pass([])
    assert agent.value("unreadable_devices") == 1
    host.write_device_file("0000:17:00.0", "vendor", "0x10de")
    agent.loop._pass([])
    assert agent.value("unreadable_devices") == 0


def test_udev_events_count_by_action_within_a_fixed_list(host, clock):
    agent = Agent(host, clock)
    assert agent.value("udev_events_total", action="add") == 0  # present before the first
    for action in ("add", "bind", "unbind", "remove", "overflow", "something-new"):
        agent.loop.notify_udev(action, "0000:17:00.0")
    for action in ("add", "bind", "unbind", "remove", "overflow", "other"):
        assert agent.value("udev_events_total", action=action) == 1, action
