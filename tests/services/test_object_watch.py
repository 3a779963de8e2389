# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""watch_objects: the list and the watch that follows it see the same objects."""

from __future__ import annotations

import threading

from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.ports.kube import NODES, WatchEvent
from deckhouse_gpu.services.object_watch import start_watch
from testkit.waiting import wait_for


def test_a_field_selector_applies_to_the_watch_as_to_the_list() -> None:
    api = MemoryKube()
    for name in ("w1", "w2"):
        api.create(NODES, {"metadata": {"name": name}})
    seen: list[str] = []

    def on_change(event: WatchEvent | None) -> None:
        if event is not None:
            seen.append(event.object["metadata"]["name"])

    stop = threading.Event()
    thread = start_watch(api, NODES, None, on_change, stop, field_selector="metadata.name=w1")
    try:
        api.patch(NODES, "w2", {"metadata": {"labels": {"a": "1"}}})
        api.patch(NODES, "w1", {"metadata": {"labels": {"a": "1"}}})
        wait_for(lambda: "w1" in seen)
        api.patch(NODES, "w2", {"metadata": {"labels": {"a": "2"}}})
        api.patch(NODES, "w1", {"metadata": {"labels": {"a": "2"}}})
        wait_for(lambda: seen.count("w1") == 2)
        assert seen == ["w1", "w1"]  # the other node's changes never arrive
    finally:
        stop.set()
        api.patch(NODES, "w1", {"metadata": {"labels": {"a": "stop"}}})  # wakes the waiting watch
        thread.join(timeout=5)
