# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The list-and-watch cache: index, changes reported once, relist after an expired watch."""

import threading
import time

from deckhouse_gpu.domain.inventory.driver_ready import pod_node
from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import Unavailable
from deckhouse_gpu.services.runtime.informer import Informer, OnChange
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.waiting import wait_for
from tests.support.controller_objects import NAMESPACE, add_pod, pod, ready_status, set_pod_status


def recorder() -> tuple[list[tuple[str | None, str | None]], OnChange]:
    seen: list[tuple[str | None, str | None]] = []

    def on_change(old, new):
        name = lambda o: None if o is None else o["metadata"]["name"]  # noqa: E731
        seen.append((name(old), name(new)))

    return seen, on_change


def test_list_fills_the_cache_and_index_and_reports_additions():
    kube = MemoryKube()
    add_pod(kube, "val-a", "w1")
    add_pod(kube, "val-b", "w2")
    kube.create(PODS, {"metadata": {"name": "other", "namespace": NAMESPACE}, "spec": {"nodeName": "w1"}})
    seen, on_change = recorder()
    informer = Informer(
        kube,
        PODS,
        on_change,
        namespace=NAMESPACE,
        label_selector="app=nvidia-driver-validator",
        index_by=pod_node,
    )
    informer.list_once()
    assert informer.synced.is_set()
    assert [p["metadata"]["name"] for p in informer.indexed("w1")] == ["val-a"]
    assert informer.index_values() == ["w1", "w2"]
    assert sorted(seen) == [(None, "val-a"), (None, "val-b")]


def test_watch_follows_changes_and_moves_index_entries():
    kube = MemoryKube()
    seen, on_change = recorder()
    informer = Informer(
        kube, PODS, on_change, namespace=NAMESPACE, index_by=pod_node, watch_timeout_seconds=1
    )
    stop = threading.Event()
    threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
    try:
        wait_for(informer.synced.is_set)
        add_pod(kube, "val-a", "w1")
        set_pod_status(kube, "val-a", ready_status())
        wait_for(lambda: (informer.get("val-a", NAMESPACE) or {}).get("status") == ready_status())
        kube.delete(PODS, "val-a", NAMESPACE)
        wait_for(lambda: informer.get("val-a", NAMESPACE) is None)
        assert informer.indexed("w1") == []
        assert seen == [(None, "val-a"), ("val-a", "val-a"), ("val-a", None)]
    finally:
        stop.set()


def test_relist_reports_only_the_differences():
    kube = MemoryKube()
    kube.create(PODS, pod("keep", "w1"))
    kube.create(PODS, pod("gone", "w1"))
    seen, on_change = recorder()
    informer = Informer(kube, PODS, on_change, namespace=NAMESPACE, index_by=pod_node)
    informer.list_once()
    seen.clear()
    kube.delete(PODS, "gone", NAMESPACE)
    kube.create(PODS, pod("new", "w2"))
    informer.list_once()
    assert sorted(seen, key=str) == sorted([("gone", None), (None, "new")], key=str)
    assert [p["metadata"]["name"] for p in informer.indexed("w1")] == ["keep"]


def test_transform_keeps_only_what_is_needed():
    kube = MemoryKube()
    kube.create(PODS, pod("val-a", "w1"))
    informer = Informer(
        kube,
        PODS,
        lambda old, new: None,
        namespace=NAMESPACE,
        transform=lambda o: {"metadata": o["metadata"]},
    )
    informer.list_once()
    assert "spec" not in informer.items()[0]


def test_failing_list_is_retried_with_backoff_and_reported_until_it_works():
    kube = MemoryKube()
    kube.create(PODS, pod("val-a", "w1"))
    kube.fail_next("list", Unavailable("connection refused"), times=3)
    informer = Informer(
        kube, PODS, lambda old, new: None, namespace=NAMESPACE, retry_seconds=0.01, watch_timeout_seconds=1
    )
    stop = threading.Event()
    threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
    try:
        wait_for(informer.synced.is_set)
        assert kube.calls["list"] == 4
        assert informer.failing_for(time.monotonic()) == 0.0
        assert informer.get("val-a", NAMESPACE) is not None
    finally:
        stop.set()


def test_a_failing_list_backs_off_jittered_and_honours_retry_after():
    kube = MemoryKube()
    kube.fail_next("list", Unavailable("throttled", retry_after=0.3), times=1)
    kube.fail_next("list", Unavailable("connection refused"), times=1)
    waits: list[float] = []

    class Recording(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(float(timeout or 0.0))
            return self.is_set()

    informer = Informer(
        kube, PODS, lambda old, new: None, namespace=NAMESPACE, retry_seconds=0.1, draw=lambda: 1.0
    )
    stop = Recording()
    threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
    try:
        wait_for(informer.synced.is_set)
        # The first failure waits for the server's Retry-After; the second, the jittered step
        # (0.2 s drawn at its lowest, 0.1 s).
        assert waits[:2] == [0.3, 0.1]
    finally:
        stop.set()
