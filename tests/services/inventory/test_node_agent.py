# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The agent's real loop in a thread against the in-memory API: event-driven, within a second."""

import threading
from collections.abc import Callable, Iterator

import pytest

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Unavailable
from deckhouse_gpu.services.inventory.deletion_watch import start_deletion_watch
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync, SyncReport
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import Trigger
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.waiting import wait_for

# Long enough that no test passes because of a periodic rescan.
SETTINGS = LoopSettings(
    debounce_seconds=0.02, recheck_seconds=0.2, resync_seconds=3600, backoff_initial_seconds=0.05
)


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> float:
    """Generous for a busy machine: the resync (an hour) is what a change must not wait for."""
    return wait_for(condition, timeout)


class Agent:
    def __init__(self, host: HostBuilder) -> None:
        self.api = MemoryKube()
        self.api.create(NODES, {"metadata": {"name": "w1"}})
        clock = SystemClock()
        sync = InventorySync(
            self.api, SysfsHost(host.root), "w1", EventRecorder(self.api, "agent", "w1", clock)
        )
        self.health = HealthState()
        self.loop = NodeAgentLoop(sync, self.health, clock, SETTINGS)
        self.stop = threading.Event()

    def start(self, watch: bool = False) -> None:
        threading.Thread(target=self.loop.run, args=(self.stop,), daemon=True).start()
        if watch:
            start_deletion_watch(
                self.api, PHYSICAL_GPUS, node_selector("w1"), self.loop.notify_deleted, self.stop
            )

    def names(self) -> set[str]:
        return {obj["metadata"]["name"] for obj in self.api.list(PHYSICAL_GPUS).items}


@pytest.fixture
def agent(host: HostBuilder) -> Iterator[Agent]:
    running = Agent(host)
    yield running
    running.stop.set()


def test_startup_pass_then_hotplug_is_reflected_without_a_resync(agent, host):
    host.add_gpu("a30", "0000:17:00.0")
    agent.start()
    eventually(lambda: agent.names() == {"w1-0000-17-00-0"})
    # The object is written before the pass ends and records its health: wait for the record too.
    eventually(lambda: agent.health.snapshot().ok)
    host.add_gpu("l40s", "0000:ca:00.0")
    agent.loop.notify_udev("add", "0000:ca:00.0")
    eventually(lambda: "w1-0000-ca-00-0" in agent.names())
    host.remove_device("0000:ca:00.0")
    agent.loop.notify_udev("remove", "0000:ca:00.0")
    eventually(lambda: "w1-0000-ca-00-0" not in agent.names())


def test_card_gone_without_event_is_removed_after_a_recheck(agent, host):
    host.add_gpu("a30", "0000:17:00.0")
    agent.start()
    eventually(lambda: agent.names() == {"w1-0000-17-00-0"})
    host.remove_device("0000:17:00.0")
    agent.loop.notify(Trigger("udev", "change of another device"))
    eventually(lambda: agent.names() == set())


def test_deleted_object_is_recreated_through_the_watch(agent, host):
    host.add_gpu("a30", "0000:17:00.0")
    agent.start(watch=True)
    eventually(lambda: agent.names() == {"w1-0000-17-00-0"})
    first_uid = agent.api.get(PHYSICAL_GPUS, "w1-0000-17-00-0")["metadata"]["uid"]
    agent.api.delete(PHYSICAL_GPUS, "w1-0000-17-00-0")
    eventually(lambda: agent.names() == {"w1-0000-17-00-0"})
    assert agent.api.get(PHYSICAL_GPUS, "w1-0000-17-00-0")["metadata"]["uid"] != first_uid


def test_api_failures_are_retried_with_backoff_and_health_follows(agent, host):
    host.add_gpu("a30", "0000:17:00.0")
    agent.api.fail_next("list", Unavailable("apiserver down"), times=3)
    agent.start()
    eventually(lambda: agent.health.snapshot().consecutive_failures >= 1)
    snapshot = agent.health.snapshot()
    assert not snapshot.ok
    assert snapshot.last_error is not None
    assert "apiserver down" in snapshot.last_error
    eventually(lambda: agent.health.snapshot().ok, timeout=2.0)  # not via list: that would eat a failure
    assert agent.names() == {"w1-0000-17-00-0"}
    assert agent.api.calls["list"] >= 4


def test_next_pass_rechecks_soon_only_while_a_card_is_suspected_gone(agent):
    loop = NodeAgentLoop(agent.loop.sync, HealthState(), SystemClock(), LoopSettings())
    assert loop._delay_after(SyncReport(ok=True)) == LoopSettings().resync_seconds
    assert loop._delay_after(SyncReport(ok=True, suspected_gone={"x": 1})) == LoopSettings().recheck_seconds
    # Cards without an owner while their Node is away: the Node is looked for again soon.
    assert loop._delay_after(SyncReport(ok=True, ownerless=True)) == LoopSettings().owner_recheck_seconds
