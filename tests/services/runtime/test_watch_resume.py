# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The informer and watch_objects as a thousand nodes need them: a watch that ends or fails
resumes from the last resourceVersion (bookmarks included) without a list; only an expired
version (410) lists again; the field selector reaches the server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, cast

from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES, KubeAPI, Unavailable, WatchEvent, WatchExpired
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.object_watch import watch_objects
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.waiting import wait_for


class _Scripted:
    """The in-memory server behind a script: each watch call takes the next step, which is
    "fail" (the connection refused), "bookmark" (one bookmark at version 900, then the stream
    ends), "expire" (410) or "live" (the real stream)."""

    def __init__(self, api: MemoryKube, steps: list[str]) -> None:
        self.api, self.steps = api, steps
        self.lists: list[dict[str, Any]] = []
        self.watches: list[tuple[str, dict[str, Any]]] = []
        self.timeouts: list[Any] = []

    def list(self, *args: Any, **kwargs: Any) -> Any:
        self.lists.append(kwargs)
        return self.api.list(*args, **kwargs)

    def watch(self, resource: Any, version: str, *args: Any, **kwargs: Any) -> Iterator[WatchEvent]:
        self.watches.append((version, kwargs))
        self.timeouts.append(args[2] if len(args) > 2 else kwargs.get("timeout_seconds"))
        step = self.steps.pop(0) if self.steps else "live"
        if step == "fail":
            raise Unavailable("connection refused")
        if step == "expire":
            raise WatchExpired("410 too old resource version")
        if step == "bookmark":
            return iter([WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "900"}})])
        return self.api.watch(resource, self.api.resource_version, *args, **kwargs)


def _node_informer(api: _Scripted, **kwargs: Any) -> Informer:
    return Informer(
        cast(KubeAPI, api), NODES, lambda _o, _n: None, retry_seconds=0.01, watch_timeout_seconds=1, **kwargs
    )


def _run(informer: Informer, api: _Scripted, until: int) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(api.watches) >= until)
    finally:
        stop.set()


def test_a_failed_or_ended_watch_resumes_from_the_bookmark_without_a_list() -> None:
    memory = MemoryKube()
    memory.create(NODES, {"metadata": {"name": "w1"}})
    api = _Scripted(memory, ["bookmark", "fail", "fail"])
    resumed: list[int] = []
    informer = _node_informer(api, field_selector="metadata.name=w1", on_resumed=lambda: resumed.append(1))
    _run(informer, api, until=4)
    listed_at = memory.list(NODES).resource_version
    assert len(api.lists) == 1
    assert [version for version, _ in api.watches] == [listed_at, "900", "900", "900"]
    assert {kwargs["field_selector"] for _, kwargs in api.watches} == {"metadata.name=w1"}
    assert api.lists[0]["field_selector"] == "metadata.name=w1"
    assert resumed  # said once the server answered again


def test_only_an_expired_version_lists_again() -> None:
    memory = MemoryKube()
    memory.create(NODES, {"metadata": {"name": "w1"}})
    api = _Scripted(memory, ["expire"])
    informer = _node_informer(api)
    _run(informer, api, until=2)
    assert len(api.lists) == 2


def test_watch_timeouts_are_spread_between_the_minimum_and_twice_it() -> None:
    memory = MemoryKube()
    api = _Scripted(memory, ["bookmark", "bookmark"])
    draws = iter([0.0, 0.5, 0.99])
    informer = Informer(
        cast(KubeAPI, api),
        RESOURCE_SLICES,
        lambda _o, _n: None,
        watch_timeout_seconds=300,
        draw=lambda: next(draws),
    )
    _run(informer, api, until=3)
    assert api.timeouts[:3] == [300, 450, 597]


def test_watch_objects_resumes_too_and_reports_only_relists() -> None:
    memory = MemoryKube()
    memory.create(NODES, {"metadata": {"name": "w1"}})
    api = _Scripted(memory, ["bookmark", "fail", "expire"])
    seen: list[str] = []
    stop = threading.Event()

    def on_change(event: WatchEvent | None) -> None:
        seen.append("relisted" if event is None else event.type)

    thread = threading.Thread(
        target=watch_objects,
        args=(api, NODES, None, on_change, stop),
        kwargs={"draw": lambda: 0.0, "field_selector": "metadata.name=w1"},
        daemon=True,
    )
    thread.start()
    try:
        wait_for(lambda: len(api.watches) >= 4)
    finally:
        stop.set()
    assert len(api.lists) == 2  # the first and the one after the 410
    assert [version for version, _ in api.watches][1:3] == ["900", "900"]
    assert seen == ["relisted"]  # the bookmark and the failure are not changes
