# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube.watch: replay, filters, live events, expiry and copies."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Invalid, WatchEvent, WatchExpired
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import WIDGETS, gpu, rv, widget

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


def test_watch_replays_changes_strictly_after_the_resource_version(kube):
    kube.create(PHYSICAL_GPUS, gpu("before"))
    start = kube.list(PHYSICAL_GPUS).resource_version
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.create(NODES, {"metadata": {"name": "node-a"}})  # another resource: not in this watch
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": {"ok": True}}, subresource="status")
    kube.delete(PHYSICAL_GPUS, "gpu-a")
    events = list(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("DELETED", "gpu-a"),
    ]
    versions = [rv(e.object) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(start)
    deleted = events[-1].object
    assert deleted["status"] == {"ok": True}  # the last state
    assert deleted["spec"] == {"index": 1}
    assert deleted["metadata"]["resourceVersion"] == kube.resource_version
    # Resuming from the middle gives only what came after it.
    resumed = list(kube.watch(PHYSICAL_GPUS, str(versions[1]), timeout_seconds=0))
    assert [e.type for e in resumed] == ["MODIFIED", "DELETED"]


def test_watch_from_zero_starts_with_the_current_objects(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.create(PHYSICAL_GPUS, gpu("gpu-b"))
    kube.delete(PHYSICAL_GPUS, "gpu-b")
    events = list(kube.watch(PHYSICAL_GPUS, "0", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "gpu-a")]


def test_watch_filters_by_label_selector_including_transitions(kube):
    kube.create(NODES, {"metadata": {"name": "node-a"}})
    start = kube.resource_version  # not "0", which would mean "from the current state"
    kube.create(PHYSICAL_GPUS, gpu("gpu-a", labels={"vendor": "nvidia"}))
    kube.create(PHYSICAL_GPUS, gpu("gpu-b", labels={"vendor": "amd"}))
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    kube.patch(PHYSICAL_GPUS, "gpu-b", {"metadata": {"labels": {"vendor": "nvidia"}}})  # enters
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"labels": {"vendor": "amd"}}})  # leaves
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 2}})  # outside: unseen
    kube.delete(PHYSICAL_GPUS, "gpu-a")  # outside: unseen
    kube.delete(PHYSICAL_GPUS, "gpu-b")
    events = list(kube.watch(PHYSICAL_GPUS, start, label_selector="vendor=nvidia", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("ADDED", "gpu-b"),
        ("DELETED", "gpu-a"),
        ("DELETED", "gpu-b"),
    ]
    with pytest.raises(Invalid):
        kube.watch(PHYSICAL_GPUS, start, label_selector="vendor in")


def test_watch_filters_by_namespace(kube):
    kube.create(WIDGETS, widget("w0", namespace="two"))
    start = kube.resource_version
    kube.create(WIDGETS, widget("w1", namespace="one"))
    kube.create(WIDGETS, widget("w2", namespace="two"))
    events = list(kube.watch(WIDGETS, start, namespace="two", timeout_seconds=0))
    assert [e.object["metadata"]["name"] for e in events] == ["w2"]
    assert len(list(kube.watch(WIDGETS, start, timeout_seconds=0))) == 2
    current = list(kube.watch(WIDGETS, "0", namespace="two", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in current] == [("ADDED", "w0"), ("ADDED", "w2")]


def test_watch_blocks_for_live_events_until_the_timeout(kube):
    start = kube.resource_version
    received: queue.Queue[WatchEvent | None] = queue.Queue()

    def consume():
        for event in kube.watch(PHYSICAL_GPUS, start, timeout_seconds=1):
            received.put(event)
        received.put(None)

    began = time.monotonic()
    consumer = threading.Thread(target=consume)
    consumer.start()
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    event = received.get(timeout=2)
    assert event is not None
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "gpu-a")
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 4}})
    event = received.get(timeout=2)
    assert event is not None
    assert event.type == "MODIFIED"
    assert received.get(timeout=3) is None  # the iterator ends at the timeout
    consumer.join(timeout=1)
    # It ended at its timeout, not before (that it ended at all is the None above).
    assert time.monotonic() - began >= 0.9


def test_watch_from_a_compacted_resource_version_expires():
    kube = MemoryKube(history=3)
    for index in range(5):
        kube.create(NODES, {"metadata": {"name": f"n{index}"}})
    # Revisions 1 and 2 fell out of the history: 2 is the last one still resumable.
    assert [e.object["metadata"]["name"] for e in kube.watch(NODES, "2", timeout_seconds=0)] == [
        "n2",
        "n3",
        "n4",
    ]
    # Like the real server's ERROR event, expiry shows at the first next(), not at the call.
    expired = kube.watch(NODES, "1", timeout_seconds=0)
    with pytest.raises(WatchExpired, match="too old"):
        next(expired)
    with pytest.raises(Invalid):
        kube.watch(NODES, "abc", timeout_seconds=0)


def test_a_watcher_that_falls_behind_the_history_expires():
    kube = MemoryKube(history=2)
    events = kube.watch(NODES, kube.resource_version, timeout_seconds=0)
    for index in range(4):
        kube.create(NODES, {"metadata": {"name": f"n{index}"}})
    with pytest.raises(WatchExpired):
        next(events)


def test_watch_events_are_copies(kube):
    start = kube.resource_version
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    first = next(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    first.object["spec"]["index"] = 42
    again = next(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    assert again.object["spec"]["index"] == 0
