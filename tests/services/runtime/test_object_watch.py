# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""watch_objects: the list and the watch that follows it see the same objects."""

from __future__ import annotations

import threading
from typing import Any

from deckhouse_gpu.domain.backoff import Backoff
from deckhouse_gpu.ports.kube import NODES, Unavailable, WatchEvent
from deckhouse_gpu.services.runtime.object_watch import start_watch, watch_objects
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
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


class _Failing:
    """An API whose lists fail ``times`` times (with the server's Retry-After, when given)."""

    def __init__(self, api: MemoryKube, times: int, retry_after: float | None = None) -> None:
        self.api, self.times, self.retry_after = api, times, retry_after

    def list(self, *args: Any, **kwargs: Any) -> Any:
        if self.times:
            self.times -= 1
            raise Unavailable("GET /api/v1/nodes: 429 TooManyRequests", retry_after=self.retry_after)
        return self.api.list(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        return self.api.watch(*args, **kwargs)


class _Waits(threading.Event):
    """A stop event that records each wait and stops after the first success."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        return self.is_set()


def _failed_lists(times: int, retry_after: float | None = None) -> list[float]:
    stop = _Waits()

    def on_change(event: WatchEvent | None) -> None:
        stop.set()

    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1"}})
    failing = _Failing(api, times, retry_after)
    # A daemon: after the event it asked for, the watch may block until the in-memory server's
    # watch timeout, and a test process must not wait for that at exit.
    thread = threading.Thread(
        target=watch_objects,
        args=(failing, NODES, None, on_change, stop),
        kwargs={"draw": lambda: 0.0},
        daemon=True,
    )
    thread.start()
    wait_for(lambda: not failing.times)
    api.patch(NODES, "w1", {"metadata": {"labels": {"a": "1"}}})  # the watch's first event stops it
    thread.join(timeout=5)
    return stop.waits


def test_failed_lists_back_off_exponentially_up_to_the_cap() -> None:
    assert _failed_lists(8) == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_a_throttled_list_waits_at_least_the_servers_retry_after() -> None:
    assert _failed_lists(2, retry_after=5.0) == [5.0, 5.0]


def test_listed_is_set_by_the_first_list_that_succeeds_and_no_earlier() -> None:
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1"}})
    failing = _Failing(api, times=2)
    stop, listed = threading.Event(), threading.Event()
    seen: list[WatchEvent | None] = []
    released = threading.Event()

    class _Held:
        """``failing``, whose lists wait until the test has looked at ``listed``."""

        def list(self, *args: Any, **kwargs: Any) -> Any:
            released.wait(5)
            return failing.list(*args, **kwargs)

        def watch(self, *args: Any, **kwargs: Any) -> Any:
            return failing.watch(*args, **kwargs)

    thread = threading.Thread(
        target=watch_objects,
        args=(_Held(), NODES, None, seen.append, stop),
        kwargs={"draw": lambda: 0.0, "backoff": Backoff(initial=0.01, cap=0.01), "listed": listed},
        daemon=True,
    )
    thread.start()
    try:
        assert not listed.wait(0.2)
        released.set()
        assert listed.wait(5)
        assert failing.times == 0  # both failed lists came first
        assert seen == []  # the first list is reported by no event: listed is how a caller knows
        api.patch(NODES, "w1", {"metadata": {"labels": {"a": "1"}}})
        wait_for(lambda: len(seen) == 1)
    finally:
        stop.set()
        api.patch(NODES, "w1", {"metadata": {"labels": {"a": "stop"}}})
        thread.join(timeout=5)
