# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""OwnWrites: a writer reads its own writes from a lagging watch cache, and nothing more."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.services.runtime.own_writes import OwnWrites


def obj(name: str, version: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "spec": spec}


class Cache:
    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}
        self.seen: list[tuple[Any, Any]] = []
        self.writes = OwnWrites(lambda: list(self.store.values()))
        self.on_change = self.writes.observing(lambda old, new: self.seen.append((old, new)))

    def event(self, new: dict[str, Any] | None, name: str) -> None:
        old = self.store.pop(name, None)
        if new is not None:
            self.store[name] = new
        self.on_change(old, new)


def test_a_write_stands_in_until_the_cache_shows_it() -> None:
    cache = Cache()
    cache.event(obj("a", "1", x=1), "a")
    cache.writes.wrote(obj("a", "1", x=1), obj("a", "2", x=2))
    cache.writes.wrote(None, obj("b", "3"))
    assert [(o["metadata"]["name"], o["spec"]) for o in cache.writes.items()] == [("a", {"x": 2}), ("b", {})]
    assert cache.writes.own(obj("a", "2"))
    assert not cache.writes.own(obj("a", "1"))
    cache.event(obj("a", "5", x=9), "a")  # someone else wrote after us: the cache is right
    assert [o["spec"] for o in cache.writes.items() if o["metadata"]["name"] == "a"] == [{"x": 9}]


def test_a_created_object_deleted_at_once_is_not_kept_alive() -> None:
    cache = Cache()
    cache.writes.wrote(None, obj("b", "3"))
    cache.event(obj("b", "3"), "b")  # our create arrives
    cache.event(None, "b")  # and someone deletes it
    assert cache.writes.items() == []
    assert len(cache.seen) == 2  # the listener still hears every change


def test_a_delete_hides_the_object_until_the_cache_drops_it() -> None:
    cache = Cache()
    cache.event(obj("a", "1"), "a")
    cache.writes.wrote(obj("a", "1"), None)
    assert cache.writes.items() == []
    cache.event(None, "a")
    cache.event(obj("a", "7"), "a")  # created again by someone
    assert [o["metadata"]["resourceVersion"] for o in cache.writes.items()] == ["7"]
