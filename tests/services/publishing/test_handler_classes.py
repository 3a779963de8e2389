# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's loop, publisher and DeviceClass watch wired as in `gpu-handler run`: a class
created or deleted republishes the node's offers with no other trigger (DESIGN.md D19)."""

from __future__ import annotations

import threading

from deckhouse_gpu.cmd.gpu_handler.wiring import follow_device_classes
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from tests.domain.offers.test_class_demand import WHOLE, device_class, mig
from tests.services.publishing.test_capabilities import A30, make_card
from tests.services.publishing.test_xid_watcher import until


def devices(api: MemoryKube) -> set[str]:
    return {d["name"] for s in api.list(RESOURCE_SLICES).items for d in s["spec"].get("devices", [])}


def test_a_class_created_or_deleted_republishes_the_offers():
    api, clock = MemoryKube(), SystemClock()
    api.create(NODES, {"metadata": {"name": "w1"}})
    api.create(DEVICE_CLASSES, device_class("whole", WHOLE))
    nvml = SimulatedNVML({A30: "a30"}, node_name="w1")
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    capabilities = CapabilitiesPass(api, nvml, "w1", events, clock, HealthSettings())
    publisher = SlicePublisher(api, "w1", events, PublisherSettings())
    timing = LoopTiming(debounce_seconds=0.01, backoff_initial_seconds=0.1, backoff_max_seconds=0.5)
    loop = HandlerLoop(
        capabilities, HealthState(), clock, HandlerSettings(heartbeat_seconds=3600, timing=timing), publisher
    )
    make_card(api, A30)
    stop = threading.Event()
    follow_device_classes(api, publisher, loop.on_class_change, stop)
    runner = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    runner.start()
    try:
        until(lambda: devices(api) == {"gpu-0000-17-00-0"})  # the whole card only: one class
        api.create(DEVICE_CLASSES, device_class("small", mig("1g.6gb")))
        small = {f"gpu-0000-17-00-0-mig-1g-6gb-{start}" for start in range(4)}
        until(lambda: devices(api) == {"gpu-0000-17-00-0", *small})  # no heartbeat: the watch did it
        api.delete(DEVICE_CLASSES, "small")
        until(lambda: devices(api) == {"gpu-0000-17-00-0"})
    finally:
        stop.set()
        loop.wake()
        runner.join(2)
        assert not runner.is_alive()
