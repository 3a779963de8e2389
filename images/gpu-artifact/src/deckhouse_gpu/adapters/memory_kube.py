"""An in-memory Kubernetes API server behind ``KubeAPI``, for the tests and the simulator.

It keeps the API server rules the services depend on, so code that works here works against a
cluster: one global resourceVersion, optimistic concurrency, the status subresource, generation,
watches resumable from a resourceVersion (and expiring when it is too old), label selectors and
background garbage collection through ownerReferences. Thread-safe: the simulator runs the
components in threads against one instance.
"""

from __future__ import annotations

import copy
import itertools
import secrets
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from deckhouse_gpu.domain.label_selector import Selector, parse_selector
from deckhouse_gpu.domain.merge_patch import apply_patch
from deckhouse_gpu.ports.kube import (
    AlreadyExists,
    Conflict,
    Invalid,
    KubeError,
    NotFound,
    Object,
    ObjectList,
    Resource,
    WatchEvent,
    WatchExpired,
)

VERBS = ("get", "list", "create", "patch", "delete", "watch")
WRITE_VERBS = ("create", "patch", "delete")
# Kubernetes leaves vowels out of generated names so that they never spell words.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_Kind = tuple[str, str]  # (group, plural): the same objects whatever the version
_Key = tuple[str | None, str]  # (namespace, name)
_EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class _Change:
    revision: int
    kind: _Kind
    type: _EventType
    object: Object
    previous: Object | None  # lets a watch see an object enter or leave its label selector


class MemoryKube:
    """``clock`` stamps creationTimestamp; ``history`` is how many events a watch can resume."""

    def __init__(self, clock: Callable[[], datetime] | None = None, history: int = 1000) -> None:
        if history < 1:
            raise ValueError("history must keep at least one event")
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cond = threading.Condition()
        self._store: dict[_Kind, dict[_Key, Object]] = defaultdict(dict)
        self._revision = 0
        self._changes: deque[_Change] = deque()
        self._history = history
        self._compacted = 0  # newest revision dropped from the history; older watches expire
        self._failures: dict[str, deque[KubeError]] = defaultdict(deque)
        self.calls: Counter[str] = Counter()
        """Calls per verb, failed ones included: lets a test assert that nothing was written."""

    def fail_next(self, verb: str, error: KubeError, times: int = 1) -> None:
        """Makes the next ``times`` calls of ``verb`` raise ``error`` before doing anything."""
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; expected one of {', '.join(VERBS)}")
        with self._cond:
            self._failures[verb].extend([error] * times)

    @property
    def writes(self) -> int:
        return sum(self.calls[verb] for verb in WRITE_VERBS)

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._revision)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        with self._cond:
            self._begin("get")
            return copy.deepcopy(self._find(resource, self._key(resource, namespace, name)))

    def list(
        self, resource: Resource, label_selector: str | None = None, namespace: str | None = None
    ) -> ObjectList:
        with self._cond:
            self._begin("list")
            selector = _selector(label_selector)
            _check_scope(resource, namespace, required=False)
            items = [
                copy.deepcopy(obj)
                for (ns, _), obj in sorted(self._store[_kind(resource)].items(), key=_sort_key)
                if namespace in (None, ns) and selector.matches(_labels(obj))
            ]
            return ObjectList(items, str(self._revision))

    def create(self, resource: Resource, obj: Object) -> Object:
        with self._cond:
            self._begin("create")
            new = copy.deepcopy(obj)
            meta = _metadata(new)
            for field, expected in (("apiVersion", resource.api_version), ("kind", resource.kind)):
                if new.setdefault(field, expected) != expected:
                    raise Invalid(f"{field} {new[field]!r} does not match {expected!r}")
            if meta.get("resourceVersion"):
                raise Invalid("resourceVersion should not be set on objects to be created")
            # The real server drops a namespace given to a cluster-scoped object.
            namespace = meta.get("namespace") if resource.namespaced else None
            if not resource.namespaced:
                meta.pop("namespace", None)
            _check_scope(resource, namespace, required=True)
            bucket = self._store[_kind(resource)]
            name = meta.get("name") or _generate_name(meta.get("generateName"), namespace, bucket)
            if (namespace, name) in bucket:
                raise AlreadyExists(f'{resource.plural} "{name}" already exists')
            if resource.has_status:
                new.pop("status", None)
            created = self._clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=created, generation=1)
            return copy.deepcopy(self._commit(_kind(resource), "ADDED", new, None))

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
            key = self._key(resource, namespace, name)
            if subresource not in (None, "status") or (subresource and not resource.has_status):
                raise NotFound(f"{resource.plural} has no subresource {subresource!r}")
            if not isinstance(patch, dict):
                raise Invalid("a merge patch must be a JSON object")
            current = self._find(resource, key)
            _check_preconditions(current, patch.get("metadata"))
            patched = apply_patch(current, patch)
            if subresource == "status":
                # Only status moves; everything else in the patch is ignored, as the server does.
                new = _with_status(copy.deepcopy(current), patched.get("status"))
            else:
                new = _keep_system_fields(current, patched)
                if resource.has_status:
                    new = _with_status(new, current.get("status"))
            if new == current:
                return copy.deepcopy(current)  # a no-op: no new resourceVersion, no event
            if _spec(new) != _spec(current):
                new["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
            return copy.deepcopy(self._commit(_kind(resource), "MODIFIED", new, current))

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        uid: str | None = None,
    ) -> None:
        with self._cond:
            self._begin("delete")
            key = self._key(resource, namespace, name)
            current = self._find(resource, key)
            if uid is not None and current["metadata"].get("uid") != uid:
                actual = current["metadata"].get("uid")
                raise Conflict(f"precondition failed: UID in precondition: {uid}, UID in object: {actual}")
            self._remove(_kind(resource), key)

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        label_selector: str | None = None,
        namespace: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[WatchEvent]:
        # A bad request fails here, as the real request would; a too old version fails at the first
        # next(), as the real server's ERROR event does, so callers handle it where they must.
        with self._cond:
            self._begin("watch")
            selector = _selector(label_selector)
            _check_scope(resource, namespace, required=False)
            if resource_version not in ("", "0") and not resource_version.isdigit():
                raise Invalid(f"invalid resourceVersion {resource_version!r}")
            since = int(resource_version or 0)
            initial: tuple[WatchEvent, ...] = ()
            if since == 0:
                # "0" or "" means "from any point": like the API server, start with the current
                # objects as synthetic ADDED events, then follow the changes after them.
                since = self._revision
                initial = tuple(
                    WatchEvent("ADDED", copy.deepcopy(obj))
                    for (ns, _), obj in sorted(self._store[_kind(resource)].items(), key=_sort_key)
                    if namespace in (None, ns) and selector.matches(_labels(obj))
                )
        deadline = time.monotonic() + timeout_seconds
        return self._follow(_kind(resource), since, initial, selector, namespace, deadline)

    def _follow(
        self,
        kind: _Kind,
        since: int,
        initial: tuple[WatchEvent, ...],
        selector: Selector,
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
                event = _visible(change, kind, selector, namespace)
                if event is not None:
                    yield event

    def _wait_after(self, seen: int, deadline: float) -> tuple[_Change, ...] | None:
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

    def _key(self, resource: Resource, namespace: str | None, name: str) -> _Key:
        _check_scope(resource, namespace, required=True)
        return (namespace, name)

    def _find(self, resource: Resource, key: _Key) -> Object:
        found = self._store[_kind(resource)].get(key)
        if found is None:
            raise NotFound(f'{resource.plural} "{key[1]}" not found')
        return found

    def _commit(self, kind: _Kind, type_: _EventType, obj: Object, previous: Object | None) -> Object:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        meta = obj["metadata"]
        if type_ != "DELETED":
            self._store[kind][(meta.get("namespace"), meta["name"])] = obj
        self._changes.append(_Change(self._revision, kind, type_, copy.deepcopy(obj), previous))
        while len(self._changes) > self._history:
            self._compacted = self._changes.popleft().revision
        self._cond.notify_all()
        return obj

    def _remove(self, kind: _Kind, key: _Key) -> None:
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


def _kind(resource: Resource) -> _Kind:
    return (resource.group, resource.plural)


def _sort_key(item: tuple[_Key, Object]) -> tuple[str, str]:
    return (item[0][0] or "", item[0][1])


def _selector(text: str | None) -> Selector:
    try:
        return parse_selector(text)
    except ValueError as error:
        raise Invalid(str(error)) from error


def _check_scope(resource: Resource, namespace: str | None, *, required: bool) -> None:
    if resource.namespaced and required and not namespace:
        raise Invalid(f"{resource.plural} are namespaced: a namespace is required")
    if not resource.namespaced and namespace:
        raise Invalid(f"{resource.plural} are cluster-scoped: no namespace may be given")


def _metadata(obj: Object) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise Invalid("metadata must be an object")
    return meta


def _labels(obj: Object) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _generate_name(prefix: object, namespace: str | None, taken: dict[_Key, Object]) -> str:
    if not prefix or not isinstance(prefix, str):
        raise Invalid("metadata.name or metadata.generateName is required")
    while True:
        name = prefix + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
        if (namespace, name) not in taken:
            return name


def _check_preconditions(current: Object, meta: object) -> None:
    if not isinstance(meta, dict):
        return
    for field in ("resourceVersion", "uid"):
        wanted = meta.get(field)
        if wanted is not None and str(wanted) != current["metadata"].get(field):
            raise Conflict(
                f"the object has been modified: {field} {wanted} in the patch, "
                f"{current['metadata'].get(field)} in the object"
            )


def _keep_system_fields(current: Object, patched: Object) -> Object:
    meta = patched.get("metadata")
    if meta is None:
        meta = patched["metadata"] = {}
    if not isinstance(meta, dict):
        raise Invalid("metadata must be an object")
    for field in ("name", "namespace"):
        if field in meta and meta[field] != current["metadata"].get(field):
            raise Invalid(f"metadata.{field} cannot be changed")
    for field in ("name", "namespace", "uid", "creationTimestamp", "generation", "resourceVersion"):
        if field in current["metadata"]:
            meta[field] = current["metadata"][field]
    patched["apiVersion"], patched["kind"] = current["apiVersion"], current["kind"]
    return patched


def _with_status(obj: Object, status: object) -> Object:
    if status is None:
        obj.pop("status", None)
    else:
        obj["status"] = status
    return obj


def _spec(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _visible(change: _Change, kind: _Kind, selector: Selector, namespace: str | None) -> WatchEvent | None:
    if change.kind != kind or namespace not in (None, change.object["metadata"].get("namespace")):
        return None
    matches = selector.matches(_labels(change.object))
    matched = change.previous is not None and selector.matches(_labels(change.previous))
    type_ = change.type
    # As the watch cache does: a change that moves an object across the selector's boundary is
    # seen as its arrival or departure.
    if type_ == "MODIFIED" and matches != matched:
        type_ = "ADDED" if matches else "DELETED"
    elif not matches:
        return None
    return WatchEvent(type_, copy.deepcopy(change.object))
