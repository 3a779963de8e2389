# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Leader election on a Lease: one leader, takeover after expiry, a leader that cannot renew stops."""

import threading
from datetime import UTC, datetime, timedelta

import pytest

from deckhouse_gpu.cmd.gpu_controller import ControllerOptions, start_controller
from deckhouse_gpu.k8s_semantics.apimachinery.leader_lease import LeaseTimings
from deckhouse_gpu.ports.controller_resources import LEASES
from deckhouse_gpu.ports.kube import EVENTS, KubeAPI, Unavailable
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings
from deckhouse_gpu.services.runtime.leader_election import LeaderElector
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.waiting import wait_for
from tests.support.controller_objects import (
    add_card,
    add_node,
    add_pod,
    crashing_status,
    driver_ready,
    ready_status,
    set_pod_status,
)


class ReplicaClock:
    """Each replica's own clocks: monotonic from its own start, wall clock possibly skewed."""

    def __init__(self, skew: timedelta = timedelta(0)) -> None:
        self.ticks = 0.0
        self.skew = skew

    def now(self) -> datetime:
        return datetime(2026, 11, 21, 12, 0, tzinfo=UTC) + self.skew + timedelta(seconds=self.ticks)

    def monotonic(self) -> float:
        return self.ticks


class LeaseOutage:
    """The API as one replica sees it, with its Lease requests failing while ``down`` is set."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.down = False

    def __getattr__(self, verb: str):
        call = getattr(self.api, verb)

        def guarded(resource, *args, **kwargs):
            if self.down and resource == LEASES:
                raise Unavailable("connection refused")
            return call(resource, *args, **kwargs)

        return guarded


def holder(kube: MemoryKube) -> str | None:
    found = kube.get(LEASES, "gpu-controller", "d8-gpu")["spec"].get("holderIdentity")
    return None if found is None else str(found)


def elector(kube, identity: str, clock: ReplicaClock, changes: list[bool] | None = None) -> LeaderElector:
    sink = changes.append if changes is not None else None
    return LeaderElector(kube, identity, "d8-gpu", clock, on_change=sink)


def test_first_candidate_creates_the_lease_and_the_second_waits():
    kube = MemoryKube()
    a, b = elector(kube, "a", ReplicaClock()), elector(kube, "b", ReplicaClock())
    a.try_once()
    b.try_once()
    assert a.is_leader()
    assert not b.is_leader()
    lease = kube.get(LEASES, "gpu-controller", "d8-gpu")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["renewTime"] == "2026-11-21T12:00:00.000000Z"


def test_follower_waits_while_the_leader_renews_then_takes_over_after_expiry():
    kube = MemoryKube()
    clock_a, clock_b = ReplicaClock(), ReplicaClock(skew=timedelta(hours=1))  # b's wall clock is far ahead
    a, b = elector(kube, "a", clock_a), elector(kube, "b", clock_b)
    a.try_once()
    b.try_once()
    for _ in range(20):  # 40 s of renewals every 2 s: b never steals, whatever its wall clock says
        clock_a.ticks += 2
        clock_b.ticks += 2
        a.try_once()
        b.try_once()
        assert a.is_leader()
        assert not b.is_leader()
    # a stops renewing (it hangs, or its node is gone): b waits the full lease duration.
    clock_b.ticks += 14.9
    b.try_once()
    assert holder(kube) == "a"
    clock_b.ticks += 0.2
    b.try_once()
    assert b.is_leader()
    assert holder(kube) == "b"
    assert kube.get(LEASES, "gpu-controller", "d8-gpu")["spec"]["leaseTransitions"] == 1
    # a wakes up: it stopped working long ago and now sees b's lease.
    clock_a.ticks += 15.1
    assert not a.is_leader()
    a.try_once()
    assert not a.is_leader()
    assert holder(kube) == "b"


def test_leader_that_cannot_renew_stops_before_others_may_take_over():
    kube = MemoryKube()
    api = LeaseOutage(kube)
    clock = ReplicaClock()
    changes: list[bool] = []
    a = elector(api, "a", clock, changes)
    a.try_once()
    a._report_change()
    api.down = True
    clock.ticks += 9.9
    a.try_once()
    assert a.is_leader()  # still within the renew deadline
    clock.ticks += 0.1
    assert not a.is_leader()  # 10 s after the last renewal began, 5 s before anyone may take over
    a._report_change()
    assert changes == [True, False]
    api.down = False
    a.try_once()  # nobody took it meanwhile: the same holder may renew and lead again
    assert a.is_leader()


def test_release_lets_the_follower_take_over_at_once():
    kube = MemoryKube()
    a, b = elector(kube, "a", ReplicaClock()), elector(kube, "b", ReplicaClock())
    a.try_once()
    b.try_once()
    a.release()
    assert not a.is_leader()
    assert holder(kube) is None
    b.try_once()
    assert b.is_leader()
    a.try_once()
    assert not a.is_leader()  # a released elector stays out


def test_two_candidates_racing_for_a_free_lease_get_one_winner():
    kube = MemoryKube()
    a, b = elector(kube, "a", ReplicaClock()), elector(kube, "b", ReplicaClock())
    a.try_once()
    a.release()
    c = elector(kube, "c", ReplicaClock())

    class RacingApi:
        """b reads the free lease, then c writes it before b's patch arrives."""

        def __getattr__(self, verb):
            return getattr(kube, verb)

        def get(self, *args, **kwargs):
            lease = kube.get(*args, **kwargs)
            c.try_once()
            return lease

    b.api = RacingApi()
    b.try_once()
    assert c.is_leader()
    assert not b.is_leader()
    assert holder(kube) == "c"


FAST = LeaseTimings(lease_duration=0.6, renew_deadline=0.4, retry_period=0.05)
SETTINGS = ControllerSettings(debounce_seconds=0.01, resync_seconds=3600, watch_timeout_seconds=2)


@pytest.fixture
def cluster() -> MemoryKube:
    kube = MemoryKube()
    add_node(kube, "w1")
    add_card(kube, "w1-gpu-0", "w1")
    add_pod(kube, "val-1", "w1", crashing_status())
    return kube


def start(kube, identity: str, stop: threading.Event):
    return start_controller(kube, stop, ControllerOptions(SETTINGS, identity=identity, lease_timings=FAST))


def reported_by(kube: MemoryKube) -> set[str]:
    return {e["reportingInstance"] for e in kube.list(EVENTS, namespace="default").items}


def test_two_replicas_only_the_leader_reconciles_and_the_follower_takes_over(cluster):
    stops = {"a": threading.Event(), "b": threading.Event()}
    replicas = {"a": start(cluster, "a", stops["a"])}
    wait_for(replicas["a"].is_leader)
    replicas["b"] = start(cluster, "b", stops["b"])
    try:
        wait_for(lambda: (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "False")
        wait_for(replicas["b"].controller.synced)
        set_pod_status(cluster, "val-1", ready_status())
        wait_for(lambda: (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "True")
        assert not replicas["b"].is_leader()
        assert reported_by(cluster) == {"a"}
        follower = replicas["b"].metrics.registry
        assert follower.get_sample_value("d8_gpu_controller_reconciles_total", {"result": "success"}) == 0
        assert follower.get_sample_value("d8_gpu_controller_is_leader") == 0
        # a dies without releasing: b takes over once the lease has expired, and works.
        stops["a"].set()
        took = wait_for(replicas["b"].is_leader, timeout=5)
        assert took >= FAST.renew_deadline  # not before a's renewals could have stopped
        assert holder(cluster) == "b"
        set_pod_status(cluster, "val-1", crashing_status())
        wait_for(lambda: (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "False")
        wait_for(lambda: reported_by(cluster) == {"a", "b"})  # the event follows the write
    finally:
        for stop in stops.values():
            stop.set()
        for replica in replicas.values():
            replica.shutdown(timeout=2)


def test_leader_cut_off_from_the_lease_stops_writing(cluster):
    api = LeaseOutage(cluster)
    stop = threading.Event()
    replica = start_controller(api, stop, ControllerOptions(SETTINGS, identity="a", lease_timings=FAST))
    try:
        wait_for(lambda: (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "False")
        api.down = True
        wait_for(lambda: not replica.is_leader(), timeout=2)
        set_pod_status(cluster, "val-1", ready_status())
        wait_for(replica.controller.queue.idle)
        stop.wait(0.2)  # time for a stray write to show up; none may
        assert (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "False"
        api.down = False  # nobody else took the lease: the same replica leads and catches up
        wait_for(lambda: (driver_ready(cluster, "w1-gpu-0") or {}).get("status") == "True", timeout=3)
    finally:
        stop.set()
        replica.shutdown(timeout=2)


def test_a_leader_renews_without_reading_the_lease_first_until_someone_else_writes_it():
    kube = MemoryKube()
    clock = ReplicaClock()
    leader = LeaderElector(kube, "a", "d8-gpu", clock)
    leader.try_once()  # acquires: reads (nothing there), creates
    assert leader.is_leader()
    for _ in range(3):
        clock.ticks += 2
        reads = kube.calls["get"]
        leader.try_once()
        assert kube.calls["get"] == reads  # one write per renewal, as client-go's leader
    assert leader.is_leader()
    kube.patch(
        LEASES, "gpu-controller", {"metadata": {"annotations": {"touched": "by-hand"}}}, namespace="d8-gpu"
    )
    clock.ticks += 2
    leader.try_once()  # its write conflicts: nothing written, the next attempt reads
    clock.ticks += 2
    reads = kube.calls["get"]
    leader.try_once()
    assert kube.calls["get"] == reads + 1
    assert leader.is_leader()
