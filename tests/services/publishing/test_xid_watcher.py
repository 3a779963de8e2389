# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Xid watcher thread on the simulated NVML's events: it follows the cards it is told, records
each Xid, wakes the handler loop for all but application errors, survives failed waits and stops
promptly; and in the handler loop an Xid makes the card unhealthy without waiting for a heartbeat."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from tests.services.publishing.test_capabilities import A30, T4, health_of, make_card

WAIT = 0.02


def until(check: Callable[[], object], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def watched() -> Iterator[tuple[SimulatedNVML, XidWatcher, list[str], threading.Event]]:
    nvml = SimulatedNVML({A30: "a30", T4: "t4"})
    watcher = XidWatcher(nvml, wait_seconds=WAIT, retry_seconds=0.1)
    woken: list[str] = []
    watcher.listener = woken.append
    stop = threading.Event()
    thread = watcher.start(stop)
    try:
        yield nvml, watcher, woken, stop
    finally:
        stop.set()
        thread.join(2)
        assert not thread.is_alive()


def registered(nvml: SimulatedNVML) -> list[tuple[str, ...]]:
    with nvml.xids._changed:
        return [s.registered for s in nvml.xids._subscriptions]


def test_it_watches_the_cards_it_follows_and_records_their_xids(watched):
    nvml, watcher, woken, _ = watched
    assert watcher.idle()  # told nothing yet: nothing to watch
    watcher.follow([A30])
    until(lambda: registered(nvml) == [(A30,)])
    until(watcher.idle)
    nvml.inject_xid(A30, 79)
    until(lambda: woken)
    assert woken == [f"Xid 79 on {A30}"]
    assert watcher.board.fatal(A30, "uid") == (79,)
    assert nvml.inject_xid(T4, 48) == 0  # not followed: not watched

    watcher.follow([A30, T4])
    assert not watcher.idle()
    until(lambda: registered(nvml) == [(A30, T4)])  # a new set; the old one is closed
    nvml.inject_xid(T4, 48)
    until(lambda: len(woken) == 2)


def test_application_xids_are_recorded_without_waking_the_loop_and_unknown_ones_wake_it(watched):
    nvml, watcher, woken, _ = watched
    watcher.follow([A30])
    until(lambda: registered(nvml) == [(A30,)])
    nvml.inject_xid(A30, 13)
    until(lambda: watcher.handled == 1)
    assert woken == []
    nvml.inject_xid(A30, 154)
    until(lambda: woken == [f"Xid 154 on {A30}"])
    assert watcher.board.take_notices() == [(A30, 154)]
    assert watcher.board.fatal(A30, "uid") == ()


def test_a_failed_wait_wakes_the_loop_and_the_set_is_opened_again(watched):
    nvml, watcher, woken, _ = watched
    watcher.follow([A30])
    until(lambda: registered(nvml) == [(A30,)])
    nvml.fail_library()
    until(lambda: "Xid wait failed" in woken)
    until(lambda: registered(nvml) == [])  # closed; opening fails while the library is broken
    nvml.clear_failures()
    until(lambda: registered(nvml) == [(A30,)], seconds=5)
    nvml.inject_xid(A30, 48)
    until(lambda: f"Xid 48 on {A30}" in woken)


def test_it_stops_within_its_bounded_wait():
    nvml = SimulatedNVML({A30: "a30"})
    watcher = XidWatcher(nvml, wait_seconds=0.2, retry_seconds=60)
    stop = threading.Event()
    watcher.follow([A30])
    thread = watcher.start(stop)
    until(lambda: registered(nvml) == [(A30,)])
    stop.set()
    # Its bounded wait (0.2 s) ends it; a watcher that waited out its retry (60 s) would still be
    # alive after a join far shorter than that.
    thread.join(10)
    assert not thread.is_alive()
    assert registered(nvml) == []  # its event set is closed on the way out


def test_it_stops_promptly_while_waiting_to_retry():
    nvml = SimulatedNVML({A30: "a30"})
    nvml.fail_library()
    watcher = XidWatcher(nvml, wait_seconds=0.1, retry_seconds=60)
    stop = threading.Event()
    watcher.follow([A30])
    thread = watcher.start(stop)
    until(watcher.idle)
    time.sleep(0.05)
    stop.set()
    thread.join(2)
    assert not thread.is_alive()


def test_in_the_handler_loop_an_xid_turns_the_card_unhealthy_before_any_heartbeat():
    api, clock = MemoryKube(), SystemClock()
    nvml = SimulatedNVML({A30: "a30", T4: "t4"}, node_name="w1")
    watcher = XidWatcher(nvml, wait_seconds=WAIT)
    health = HealthSettings(grace_seconds=30, backoff_seconds=(60,))
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    capabilities = CapabilitiesPass(api, nvml, "w1", events, clock, health, watcher.board)
    timing = LoopTiming(debounce_seconds=0.01, backoff_initial_seconds=0.1, backoff_max_seconds=0.5)
    settings = HandlerSettings(heartbeat_seconds=3600, health=health, timing=timing)  # no heartbeat
    loop = HandlerLoop(capabilities, HealthState(), clock, settings, xid_watcher=watcher)
    a30, t4 = make_card(api, A30), make_card(api, T4)
    stop = threading.Event()
    threads = [watcher.start(stop), threading.Thread(target=loop.run, args=(stop,), daemon=True)]
    threads[1].start()
    try:
        until(lambda: health_of(api, a30) == ("True", "NVMLHealthy"))
        until(lambda: registered(nvml) == [(A30, T4)])  # the pass told the watcher its cards
        nvml.inject_xid(A30, 95)
        until(lambda: health_of(api, a30) == ("False", "XidError"))
        assert health_of(api, t4) == ("True", "NVMLHealthy")
    finally:
        stop.set()
        loop.wake()
        for thread in threads:
            thread.join(2)
            assert not thread.is_alive()
