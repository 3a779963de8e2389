# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A card's health and driver changes each make one Event, with advice; passes that change
nothing, heartbeats and retries make none (no Event storms)."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.kube import EVENTS, NODES
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from tests.services.inventory.test_inventory_sync import make_sync
from tests.services.publishing.test_capabilities import A30, T4, make_card


def events(api: MemoryKube) -> list[dict[str, Any]]:
    found = api.list(EVENTS, namespace="default").items
    return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))


def test_health_events_come_on_transitions_only(clock):
    api = MemoryKube()
    nvml = SimulatedNVML({A30: "a30", T4: "t4"}, node_name="w1")
    recorder = EventRecorder(api, "gpu-handler", "w1", clock)
    capabilities = CapabilitiesPass(api, nvml, "w1", recorder, clock, HealthSettings(30, (5, 10)))
    a30, _ = make_card(api, A30), make_card(api, T4)
    capabilities.run()
    assert [e["reason"] for e in events(api)] == ["HardwareHealthyTrue", "HardwareHealthyTrue"]
    for tick in (60.0, 120.0):  # heartbeats of healthy cards
        clock.ticks = tick
        capabilities.run()
    assert len(events(api)) == 2
    nvml.fail_device(A30, "GPU is lost")
    for tick in (200.0, 235.0, 300.0, 400.0, 800.0):  # the grace period, then retries keep failing
        clock.ticks = tick
        capabilities.run()
    lost = events(api)[2:]
    assert [(e["type"], e["reason"]) for e in lost] == [("Warning", "HardwareHealthyUnknown")]
    assert lost[0]["involvedObject"]["name"] == a30
    assert "True -> Unknown (NVMLQueryFailed)" in lost[0]["message"]
    assert f"nvidia-smi -r -i {A30}" in lost[0]["message"]
    nvml.clear_failures()
    for tick in (2000.0, 2060.0):
        clock.ticks = tick
        capabilities.run()
    back = events(api)[3:]
    assert [(e["type"], e["reason"]) for e in back] == [("Normal", "HardwareHealthyTrue")]
    assert back[0]["message"].endswith("its devices are offered again")


def test_driver_events_come_on_rebinds_only(host: HostBuilder, clock):
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1"}})
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    sync.sync()
    assert [e["reason"] for e in events(api)] == ["PhysicalGPUCreated"]
    host.bind_driver("0000:17:00.0", None)
    sync.sync()
    sync.sync()
    host.bind_driver("0000:17:00.0", "nvidia")
    sync.sync()
    changes = [(e["type"], e["message"]) for e in events(api)[1:]]
    assert [kind for kind, _ in changes] == ["Warning", "Normal"]
    assert "now bound to no driver (was nvidia): nothing can use it" in changes[0][1]
    assert "now bound to nvidia (was no driver)" in changes[1][1]
