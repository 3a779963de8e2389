# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler on its watch caches, as ``gpu-handler run`` wires it: idle passes (the heartbeat)
send no request at all; a slice someone deletes or edits is written back within seconds, as
upstream's ResourceSlice controller repairs its own; the handler's own writes wake nothing."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.node_caches import HandlerCaches, slice_selector
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming, PassOutcome, Trigger
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.gpu_objects import node_cards
from testkit.waiting import wait_for

READS = ("get", "list")


class Handler:
    def __init__(self, heartbeat: float) -> None:
        self.kube = MemoryKube()
        self.kube.create(NODES, {"metadata": {"name": "w1", "uid": "u-w1"}})
        for card in node_cards("w1", "a30", 2):
            status = card.pop("status")
            self.kube.create(PHYSICAL_GPUS, card)
            self.kube.patch(PHYSICAL_GPUS, card["metadata"]["name"], {"status": status}, subresource="status")
        nvml = SimulatedNVML({"0000:10:00.0": "a30", "0000:18:00.0": "a30"}, node_name="w1")
        clock = SystemClock()
        events = EventRecorder(self.kube, "gpu-handler", "w1", clock)
        self.caches = HandlerCaches(self.kube, "w1", *(lambda _o, _n: None,) * 3, watch_timeout_seconds=1)
        capabilities = CapabilitiesPass(
            self.kube, nvml, "w1", events, clock, HealthSettings(0, (5,)), cached=self.caches.card_writes
        )
        publisher = SlicePublisher(
            self.kube, "w1", events, PublisherSettings(), cached=self.caches.slice_writes
        )
        timing = LoopTiming(debounce_seconds=0.05, backoff_initial_seconds=0.05, backoff_max_seconds=0.2)
        self.loop = HandlerLoop(
            capabilities,
            HealthState(),
            clock,
            HandlerSettings(heartbeat, timing=timing),
            publisher,
            caches=self.caches,
        )
        self.caches.follow(self.loop)
        self.passes = 0
        run_pass = self.loop._run_pass

        def counted(triggers: list[Trigger]) -> PassOutcome:
            self.passes += 1
            return run_pass(triggers)

        self.loop._run_pass = counted
        self.stop = threading.Event()

    def start(self) -> None:
        self.caches.start(self.stop)
        threading.Thread(target=self.loop.run, args=(self.stop,), daemon=True).start()
        wait_for(lambda: len(self.slices()) == 2 and self.loop.idle(), timeout=20)

    def slices(self) -> list[dict[str, Any]]:
        return self.kube.list(RESOURCE_SLICES, field_selector=slice_selector("w1")).items

    def requests(self) -> int:
        return sum(self.kube.calls[verb] for verb in ("get", "list", "create", "patch", "delete"))


def _running(heartbeat: float) -> Iterator[Handler]:
    running = Handler(heartbeat)
    running.start()
    yield running
    running.stop.set()
    running.loop.wake()


@pytest.fixture
def handler() -> Iterator[Handler]:
    """Heartbeats every 50 ms."""
    yield from _running(0.05)


@pytest.fixture
def quiet() -> Iterator[Handler]:
    """No heartbeat within the test: only a watch event can make it act."""
    yield from _running(3600.0)


def _devices(slices: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((s["metadata"]["name"], d["name"]) for s in slices for d in s["spec"].get("devices") or [])


def test_heartbeats_on_an_idle_node_send_no_request(handler: Handler) -> None:
    before, passes = handler.requests(), handler.passes
    wait_for(lambda: handler.passes >= passes + 10, timeout=20)  # ten heartbeats
    assert handler.requests() == before


def test_a_deleted_slice_is_written_back_within_seconds(quiet: Handler) -> None:
    handler = quiet
    published = handler.slices()
    gone = published[0]["metadata"]["name"]
    handler.kube.delete(RESOURCE_SLICES, gone)
    wait_for(lambda: gone in {s["metadata"]["name"] for s in handler.slices()}, timeout=10)
    assert _devices(handler.slices()) == _devices(published)


def test_an_edited_slice_is_restored_and_the_restore_wakes_nothing(quiet: Handler) -> None:
    handler = quiet
    target = next(s for s in handler.slices() if s["spec"].get("devices"))
    name = target["metadata"]["name"]
    kept = copy.deepcopy(target["spec"])
    edited = copy.deepcopy(target["spec"]["devices"])
    edited[0]["attributes"]["productName"] = {"string": "forged"}
    handler.kube.patch(RESOURCE_SLICES, name, {"spec": {"devices": edited}})
    wait_for(lambda: handler.kube.get(RESOURCE_SLICES, name)["spec"] == kept, timeout=10)
    wait_for(handler.loop.idle, timeout=10)
    passes = handler.passes
    handler.loop.wake()  # one more pass: it finds nothing to write
    wait_for(lambda: handler.passes > passes and handler.loop.idle(), timeout=10)
    requests = handler.requests()
    threading.Event().wait(0.5)
    assert (handler.requests(), handler.passes) == (requests, passes + 1)  # no write woke another pass
