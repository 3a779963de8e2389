# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fuzzing of uevents: what the kernel (through pyudev, which parses the netlink message) hands
gpu-node-agent, and what the agent does with it.

The adapter forwards every event as two strings, in order, and turns a socket error into one
"overflow" event, whatever the action and device name are. The agent's pass, given any burst of
events, never fails, never deletes a card that is still in sysfs, and deletes a card that left
sysfs only on a ``remove`` event for its exact address (else after two scans).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.host.udev_events import watch_pci_events
from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import Trigger
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from tests.adapters.host.test_udev_events import FakeDevice, FakeMonitor
from tests.support.fuzzing import fuzz

CARDS = ("0000:17:00.0", "0000:31:00.0")
ACTIONS = st.one_of(
    st.sampled_from(["add", "remove", "bind", "unbind", "change", "move", "online", "offline", "overflow"]),
    st.text(max_size=10),
)
NAMES = st.one_of(
    st.sampled_from([*CARDS, "0000:17:00.1", "0000:17:00.0 ", "0000:17:00.0\n", "0000:4a:00.0", "", "../"]),
    st.from_regex(r"\A[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z"),
    st.text(max_size=20),
)
SOCKET_ERROR = OSError(105, "No buffer space available")


@given(st.lists(st.one_of(st.tuples(st.none() | ACTIONS, NAMES), st.just(SOCKET_ERROR)), max_size=12))
@fuzz(200)
def test_the_adapter_forwards_every_event_as_two_strings(
    items: list[tuple[str | None, str] | OSError],
) -> None:
    received: list[tuple[str, str]] = []
    done = threading.Event()

    def on_event(action: str, name: str) -> None:
        if done.is_set():
            return  # the event that wakes the poll after the stop
        if name == "<last>":
            done.set()
        else:
            received.append((action, name))

    saved = sys.modules.get("pyudev")
    sys.modules["pyudev"] = types.SimpleNamespace(Monitor=FakeMonitor, Context=object)  # type: ignore[assignment]
    FakeMonitor.instances.clear()
    stop = threading.Event()
    try:
        thread = watch_pci_events(on_event, stop)
        monitor = FakeMonitor.instances[-1]
        for item in items:
            monitor.events.put(item if isinstance(item, OSError) else FakeDevice(*item))
        monitor.events.put(FakeDevice("add", "<last>"))
        assert done.wait(5)
        stop.set()
        monitor.events.put(FakeDevice("add", "<after stop>"))  # wakes the poll at once
        thread.join(timeout=5)
        assert not thread.is_alive()
    finally:
        if saved is None:
            sys.modules.pop("pyudev", None)
        else:
            sys.modules["pyudev"] = saved
    expected = [
        ("overflow", "") if isinstance(item, OSError) else (item[0] or "change", item[1]) for item in items
    ]
    assert received == expected
    assert all(type(action) is str and type(name) is str for action, name in received)


@pytest.fixture(scope="module")
def host() -> Iterator[HostBuilder]:
    root = Path(tempfile.mkdtemp(prefix="gpu-fuzz-"))
    yield HostBuilder(root).standard_node()
    shutil.rmtree(root, ignore_errors=True)


# Any event, or the remove event of one of the cards.
EVENT = st.one_of(st.tuples(ACTIONS, NAMES), st.tuples(st.just("remove"), st.sampled_from(CARDS)))


@given(gone=st.sets(st.sampled_from(CARDS)), events=st.lists(EVENT, max_size=10))
@fuzz(100)
def test_the_agent_deletes_a_card_only_when_it_is_gone(
    host: HostBuilder, gone: set[str], events: list[tuple[str, str]]
) -> None:
    for address in CARDS:
        host.add_gpu("a30", address)
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1"}})
    clock = SystemClock()
    sync = InventorySync(api, SysfsHost(host.root), "w1", EventRecorder(api, "gpu-node-agent", "w1", clock))
    loop = NodeAgentLoop(sync, HealthState(), clock, LoopSettings())
    assert loop.run_once().ok
    triggers: list[Trigger] = []
    loop.notify = triggers.append  # type: ignore[method-assign,assignment]
    for address in gone:
        host.remove_device(address)
    for action, name in events:
        loop.notify_udev(action, name)
    assert loop.run_once(triggers).ok
    left = {obj["metadata"]["name"] for obj in api.list(PHYSICAL_GPUS).items}
    for address in CARDS:
        reported = address in gone and ("remove", address) in events
        event("deleted on its remove event" if reported else "kept")
        assert (physical_gpu_name("w1", address) in left) is not reported, (address, gone, events)
