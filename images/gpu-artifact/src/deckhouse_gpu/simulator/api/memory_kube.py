# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""An in-memory Kubernetes API server behind ``KubeAPI``, for the tests and the simulator.

It keeps the API server rules the services depend on, so code that works here works against a
cluster: one global resourceVersion, optimistic concurrency, the status subresource, generation,
watches resumable from a resourceVersion (and expiring when it is too old), label selectors and
background garbage collection through ownerReferences. Thread-safe: the simulator runs the
components in threads against one instance. The stateless rules are in ``memory_kube_rules``;
this module holds the state, the locking and the watches.
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from deckhouse_gpu.ports.kube import (
    AlreadyExists,
    KubeError,
    NotFound,
    Object,
    ObjectList,
    Resource,
    WatchEvent,
    WatchExpired,
)
from deckhouse_gpu.simulator.api import memory_kube_rules as rules
from deckhouse_gpu.simulator.api.memory_kube_rules import Change, EventType, Key, Kind

VERBS = ("get", "list", "create", "patch", "delete", "watch")
WRITE_VERBS = ("create", "patch", "delete")


class MemoryKube:
    """``clock`` stamps creationTimestamp; ``history`` is how many events a watch can resume."""

    def __init__(self, clock: Callable[[], datetime] | None = None, history: int = 1000) -> None:
        if history < 1:
            raise ValueError("history must keep at least one event")
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cond = threading.Condition()
        self._store: dict[Kind, dict[Key, Object]] = defaultdict(dict)
        self._revision = 0
        self._changes: deque[Change] = deque()
        self._history = history
        self._compacted = 0  # newest revision dropped from the history; older watches expire
        self._failures: dict[str, deque[KubeError]] = defaultdict(deque)
        self.calls: Counter[str] = Counter()
        """Calls per verb, failed ones included: lets a test assert that nothing was written."""
        self.version: tuple[int, int] = (1, 35)
        # Mimics an API server with a feature gate off: it silently drops that feature's fields.
        self.drop_fields: Callable[[Resource, Object], Object] | None = None

    def fail_next(self, verb: str, error: KubeError, times: int = 1) -> None:
        """Makes the next ``times`` calls of ``verb`` raise ``error`` before doing anything."""
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; expected one of {', '.join(VERBS)}")
        with self._cond:
            self._failures[verb].extend([error] * times)

    @property
    def writes(self) -> int:
        return sum(self.calls[verb] for verb in WRITE_VERBS)

    def _admit(self, resource: Resource, obj: Object) -> Object:
        return self.drop_fields(resource, obj) if self.drop_fields is not None else obj

    def server_version(self) -> tuple[int, int]:
        """What ``version`` says: tests and the simulator choose the Kubernetes version to mimic."""
        return self.version

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._revision)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        with self._cond:
            self._begin("get")
            return copy.deepcopy(self._find(resource, rules.key_of(resource, namespace, name)))

    def list(
        self,
        resource: Resource,
        label_selector: str | None = None,
        namespace: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        with self._cond:
            self._begin("list")
            selector = rules.selector(label_selector, field_selector)
            rules.check_scope(resource, namespace, required=False)
            bucket = self._store[rules.kind_of(resource)]
            items = [
                copy.deepcopy(rules.metadata_view(resource, obj))
                for obj in rules.matching(bucket, namespace, selector)
            ]
            return ObjectList(items, str(self._revision))

    def create(self, resource: Resource, obj: Object) -> Object:
        with self._cond:
            self._begin("create")
            new, namespace = rules.to_create(resource, obj)
            meta = new["metadata"]
            bucket = self._store[rules.kind_of(resource)]
            name = meta.get("name") or rules.generate_name(meta.get("generateName"), namespace, bucket)
            if (namespace, name) in bucket:
                raise AlreadyExists(f'{resource.plural} "{name}" already exists')
            rules.stamp_created(new, name, self._clock())
            rules.default_taint_times(resource, new, self._clock())
            new = self._admit(resource, new)
            return copy.deepcopy(self._commit(rules.kind_of(resource), "ADDED", new, None))

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        subresource: str | None = None,
        namespace: str | None = None,
    ) -> Object:
        with self._cond:
            self._begin("patch")
            key = rules.key_of(resource, namespace, name)
            rules.check_patch(resource, patch, subresource)
            current = self._find(resource, key)
            new = rules.patched(resource, current, patch, subresource)
            rules.default_taint_times(resource, new, self._clock())
            new = self._admit(resource, new)
            if new == current:
                return copy.deepcopy(current)  # a no-op: no new resourceVersion, no event
            return copy.deepcopy(self._commit(rules.kind_of(resource), "MODIFIED", new, current))

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        uid: str | None = None,
    ) -> None:
        with self._cond:
            self._begin("delete")
            key = rules.key_of(resource, namespace, name)
            rules.check_uid(self._find(resource, key), uid)
            self._remove(rules.kind_of(resource), key)

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        label_selector: str | None = None,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        field_selector: str | None = None,
    ) -> Iterator[WatchEvent]:
        # A bad request fails here, as the real request would; a too old version fails at the first
        # next(), as the real server's ERROR event does, so callers handle it where they must.
        with self._cond:
            self._begin("watch")
            selector = rules.selector(label_selector, field_selector)
            rules.check_scope(resource, namespace, required=False)
            since = rules.watch_start(resource_version)
            initial: tuple[WatchEvent, ...] = ()
            if since == 0:
                # "0" or "" means "from any point": like the API server, start with the current
                # objects as synthetic ADDED events, then follow the changes after them.
                since = self._revision
                bucket = self._store[rules.kind_of(resource)]
                initial = tuple(
                    WatchEvent("ADDED", copy.deepcopy(obj))
                    for obj in rules.matching(bucket, namespace, selector)
                )
        deadline = time.monotonic() + timeout_seconds
        events = self._follow(rules.kind_of(resource), since, initial, selector, namespace, deadline)
        if not resource.metadata_only:
            return events
        return (WatchEvent(e.type, rules.metadata_view(resource, e.object)) for e in events)

    def _follow(
        self,
        kind: Kind,
        since: int,
        initial: tuple[WatchEvent, ...],
        selector: rules.ObjectSelector,
        namespace: str | None,
        deadline: float,
    ) -> Iterator[WatchEvent]:
        yield from initial
        seen = since
        while True:
            with self._cond:
                batch = self._wait_after(seen, deadline)
            if batch is None:
                return
            for change in batch:
                seen = change.revision
                event = rules.visible(change, kind, selector, namespace)
                if event is not None:
                    yield event

    def _wait_after(self, seen: int, deadline: float) -> tuple[Change, ...] | None:
        while True:
            if seen < self._compacted:  # too old from the start, or the consumer fell behind
                raise WatchExpired(f"too old resource version: {seen} ({self._compacted + 1})")
            if self._revision > seen:
                newer = itertools.takewhile(lambda c: c.revision > seen, reversed(self._changes))
                return tuple(newer)[::-1]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._cond.wait(remaining)

    def _begin(self, verb: str) -> None:
        self.calls[verb] += 1
        if self._failures[verb]:
            raise self._failures[verb].popleft()

    def _find(self, resource: Resource, key: Key) -> Object:
        found = self._store[rules.kind_of(resource)].get(key)
        if found is None:
            raise NotFound(f'{resource.plural} "{key[1]}" not found')
        return found

    def _commit(self, kind: Kind, type_: EventType, obj: Object, previous: Object | None) -> Object:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        meta = obj["metadata"]
        if type_ != "DELETED":
            self._store[kind][(meta.get("namespace"), meta["name"])] = obj
        self._changes.append(Change(self._revision, kind, type_, copy.deepcopy(obj), previous))
        while len(self._changes) > self._history:
            self._compacted = self._changes.popleft().revision
        self._cond.notify_all()
        return obj

    def _remove(self, kind: Kind, key: Key) -> None:
        gone = self._store[kind].pop(key)
        self._commit(kind, "DELETED", gone, None)
        uid = gone["metadata"].get("uid")
        # The garbage collector's background propagation: dependents go after their owner, but
        # one that still has another live owner only loses the reference to the deleted one.
        for dependent_kind, bucket in list(self._store.items()):
            for dependent_key, dependent in list(bucket.items()):
                refs = dependent["metadata"].get("ownerReferences") or []
                if bucket.get(dependent_key) is not dependent or all(r.get("uid") != uid for r in refs):
                    continue
                others = [r for r in refs if r.get("uid") != uid]
                if any(self._alive(r.get("uid")) for r in others):
                    pruned = copy.deepcopy(dependent)
                    pruned["metadata"]["ownerReferences"] = others
                    self._commit(dependent_kind, "MODIFIED", pruned, dependent)
                else:
                    self._remove(dependent_kind, dependent_key)

    def _alive(self, uid: object) -> bool:
        return any(o["metadata"].get("uid") == uid for b in self._store.values() for o in b.values())
