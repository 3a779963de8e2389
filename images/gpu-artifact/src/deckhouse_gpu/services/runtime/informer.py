# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A list-and-watch cache of one kind of object, with an index and change callbacks.

The components read only from these caches and call the API only to write, so a burst of
pod or card events costs no API requests unless something must change. A list replaces the
cache atomically (never an empty moment that would read as "no validator pods"). A watch asks for
bookmarks and resumes from the last resourceVersion it saw, whether the server ended the stream
at its timeout or the connection failed; only an expired version (410) lists again, reporting
what changed in between as ordinary changes, as client-go's reflector does. Cached objects are
shared, never copied: readers and change handlers must treat them as read-only.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from deckhouse_gpu.domain.backoff import Backoff
from deckhouse_gpu.ports.kube import KubeAPI, KubeError, Object, Resource, WatchExpired
from deckhouse_gpu.services.runtime.bulk_load import bulk_load

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace or "", name)
OnChange = Callable[[Object | None, Object | None], None]  # (old, new); None when absent
IndexBy = Callable[[Object], str | None]
Transform = Callable[[Object], Object]


def key_of(obj: Object) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class Informer:
    def __init__(
        self,
        api: KubeAPI,
        resource: Resource,
        on_change: OnChange,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        index_by: IndexBy | None = None,
        transform: Transform | None = None,
        watch_timeout_seconds: int = 300,
        retry_seconds: float = 1.0,
        retry_max_seconds: float = 30.0,
        draw: Callable[[], float] = random.random,
        on_resumed: Callable[[], None] | None = None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.on_change = on_change
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._index_by = index_by or (lambda _: None)
        self._transform = transform or (lambda obj: obj)  # what the cache keeps of each object
        self.watch_timeout_seconds = watch_timeout_seconds
        self.retry_seconds = retry_seconds
        self.retry_max_seconds = retry_max_seconds
        self._draw = draw
        self.synced = threading.Event()
        self._lock = threading.Lock()
        self._store: dict[Key, Object] = {}
        self._index: dict[str, set[Key]] = defaultdict(set)
        self._failing_since: float | None = None
        # Called when the list or watch works again after a failure or an expiry: whatever the
        # server is now (restarted, upgraded) may need a fresh look.
        self.on_resumed = on_resumed
        self._lost = False
        self._failures = 0  # failed lists or watches in a row
        self._version = ""  # the last resourceVersion seen: where a watch resumes

    def items(self) -> list[Object]:
        with self._lock:
            return list(self._store.values())

    def indexed(self, value: str) -> list[Object]:
        with self._lock:
            return [self._store[key] for key in sorted(self._index.get(value, ()))]

    def index_values(self) -> list[str]:
        with self._lock:
            return sorted(value for value, keys in self._index.items() if keys)

    def get(self, name: str, namespace: str = "") -> Object | None:
        with self._lock:
            return self._store.get((namespace, name))

    def failing_for(self, now: float) -> float:
        """Seconds the list or watch has been failing without a success in between; 0 when fine."""
        since = self._failing_since
        return 0.0 if since is None else now - since

    def list_once(self) -> str:
        """Lists and replaces the cache (reporting the differences); returns the list's version."""
        with bulk_load():  # a whole cluster's objects at once (services/runtime/bulk_load.py)
            listed = self.api.list(
                self.resource, self.label_selector, self.namespace, field_selector=self.field_selector
            )
            self._replace(listed.items)
        self._version = listed.resource_version
        self._working()
        self.synced.set()
        return listed.resource_version

    def run(self, stop: threading.Event) -> None:
        """Lists, then follows the watch, until ``stop``; failures back off up to ``retry_max_seconds``
        and resume the watch where it was; only an expired version lists again."""
        where = {
            "resource": self.resource.plural,
            "namespace": self.namespace,
            "selector": self.label_selector,
            "fieldSelector": self.field_selector,
        }
        backoff = Backoff(self.retry_seconds, self.retry_max_seconds)
        listed = False
        while not stop.is_set():
            try:
                if not listed:
                    self.list_once()
                    listed = True
                self._follow(stop)
            except WatchExpired:
                log.info("watch expired; listing again", extra=where)
                listed, self._lost = False, True
            except KubeError as error:
                if self._failing_since is None:
                    self._failing_since = time.monotonic()
                self._lost = True
                self._failures += 1
                # Jittered, and never before the server's Retry-After (domain/backoff.py).
                retry_after = getattr(error, "retry_after", None)
                delay = backoff.delay(self._failures, self._draw(), retry_after)
                log.warning(
                    "list or watch failed; retrying",
                    extra={**where, "error": str(error), "retrySeconds": round(delay, 2)},
                )
                stop.wait(delay)

    def _working(self, delivered: bool = True) -> None:
        """The server answered: a list, or a watch opened (``delivered`` once it sent or ended
        cleanly, which alone resets the backoff: a watch that opens and fails at once keeps it)."""
        self._failing_since = None
        if delivered:
            self._failures = 0
        if self._lost:
            self._lost = False
            if self.on_resumed is not None:
                try:
                    self.on_resumed()
                except Exception:
                    log.exception("resume handler failed", extra={"resource": self.resource.plural})

    def _follow(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started, seen = time.monotonic(), 0
            # Spread over [min, 2*min), as client-go's reflector: the watches of a thousand nodes,
            # opened together, do not all come back to the server at the same moment.
            timeout = int(self.watch_timeout_seconds * (1.0 + self._draw()))
            stream = self.api.watch(
                self.resource,
                self._version,
                self.label_selector,
                self.namespace,
                timeout,
                field_selector=self.field_selector,
            )
            self._working(delivered=False)
            for event in stream:
                if not seen:
                    self._working()
                seen += 1
                meta = event.object.get("metadata") or {}
                self._version = str(meta.get("resourceVersion") or self._version)
                if event.type == "BOOKMARK":
                    continue
                kept = None if event.type == "DELETED" else self._transform(event.object)
                self._apply(kept, event.object)
                if stop.is_set():
                    return
            self._working()  # ended by the server at its timeout: the stream worked
            if not seen and time.monotonic() - started < 1.0:
                # A stream closed at once with nothing in it (a proxy cutting watches): don't spin.
                stop.wait(self.retry_seconds)

    def _replace(self, items: list[Object]) -> None:
        fresh = {key_of(obj): self._transform(obj) for obj in items}
        with self._lock:
            old = self._store
            self._store = fresh
            self._index = defaultdict(set)
            for key, obj in fresh.items():
                self._add_index(key, obj)
        for key, obj in fresh.items():
            if old.get(key) != obj:
                self._notify(old.get(key), obj)
        for key, gone in old.items():
            if key not in fresh:
                self._notify(gone, None)

    def _apply(self, new: Object | None, seen: Object) -> None:
        key = key_of(seen)
        with self._lock:
            old = self._store.pop(key, None)
            if old is not None:
                self._drop_index(key, old)
            if new is not None:
                self._store[key] = new
                self._add_index(key, new)
        if old != new:
            self._notify(old, new)

    def _add_index(self, key: Key, obj: Object) -> None:
        value = self._index_by(obj)
        if value is not None:
            self._index[value].add(key)

    def _drop_index(self, key: Key, obj: Object) -> None:
        value = self._index_by(obj)
        if value is not None:
            self._index[value].discard(key)
            if not self._index[value]:
                del self._index[value]

    def _notify(self, old: Object | None, new: Object | None) -> None:
        try:
            self.on_change(old, new)
        except Exception:  # a handler bug must not kill the cache
            log.exception("change handler failed", extra={"resource": self.resource.plural})
