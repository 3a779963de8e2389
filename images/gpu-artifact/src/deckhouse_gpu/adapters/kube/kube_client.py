# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The real ``KubeAPI``: REST calls on raw JSON, with paths built from the ``Resource``.

Not the generated ``CoreV1Api``/``CustomObjectsApi`` methods: one code path serves core and custom
resources alike, nothing is turned into (and back out of) the generated pydantic models, so
unknown fields survive, and each request carries exactly the headers we choose. The requests go
through the ``kubernetes`` client's configuration and REST layer, the same in a pod and with a
kubeconfig (``kube_transport``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from urllib.parse import quote

from deckhouse_gpu.adapters.kube.kube_json import decode
from deckhouse_gpu.adapters.kube.kube_transport import (
    Response,
    Transport,
    in_cluster_transport,
    kubeconfig_transport,
)
from deckhouse_gpu.domain.backoff import RETRY_AFTER_CAP_SECONDS, parse_retry_after
from deckhouse_gpu.ports.kube import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    KubeError,
    NotFound,
    Object,
    ObjectList,
    Resource,
    Unavailable,
    WatchEvent,
    WatchExpired,
)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
_WATCH_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
# What a metadata-only list or watch asks for (``Resource.metadata_only``): the server sends
# PartialObjectMetadata, the objects' metadata without spec or status.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_ONLY_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# Items per page of a list, as client-go's pager: a cluster's thousands of Pods never come back
# (and are never decoded) in one answer.
PAGE_SIZE = 500


# A watch that sends nothing for this long is taken for silent (a load balancer or proxy that keeps
# the connection up and stops forwarding) and ends, so that the caller opens it again, from the
# resourceVersion it holds, on a new connection. The API server's watch cache sends a BOOKMARK about
# every 60 s once the resource has changed since the server started (measured on 1.35 and 1.36;
# docs/RELIABILITY.md): two intervals and a margin, so a live watch never ends for it. Where the server
# sends none (the watch cache off, a kind unchanged since the server started) the watch is opened
# again every 130 s instead of at its timeout (300-600 s): at most 28 watch requests an hour per watch,
# none a list. Without it a silent watch went unnoticed until its read timeout, up to 630 s.
WATCH_IDLE_SECONDS = 130.0

log = logging.getLogger(__name__)

# Throttled (429, or a 5xx with Retry-After) requests are sent again this many times, after the
# server's Retry-After (capped, domain/backoff.py), as client-go does: APF rejects a request before
# it runs, so any verb may be repeated. What is still refused reaches the caller's own backoff.
THROTTLE_RETRIES = 2


class ClientKube:
    def __init__(
        self,
        transport: Transport,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        watch_idle_seconds: float = WATCH_IDLE_SECONDS,
    ) -> None:
        self._transport = transport
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._sleep = sleep
        self._watch_idle_seconds = watch_idle_seconds

    def close(self) -> None:
        self._transport.close()

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return self._json("GET", _path(resource, namespace, name))

    def server_version(self) -> tuple[int, int]:
        info = self._json("GET", "/version")
        # Managed distributions report minors like "35+"; only the digits count.
        digits = ["".join(ch for ch in str(info.get(key, "")) if ch.isdigit()) for key in ("major", "minor")]
        if not all(digits):
            raise KubeError(f"GET /version: cannot read the version from {info!r}")
        return int(digits[0]), int(digits[1])

    def list(
        self,
        resource: Resource,
        label_selector: str | None = None,
        namespace: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        query = [("labelSelector", label_selector)] if label_selector else []
        query += [("fieldSelector", field_selector)] if field_selector else []
        query.append(("limit", str(PAGE_SIZE)))
        path = _path(resource, namespace, required=False)
        accept = METADATA_ONLY if resource.metadata_only else JSON
        # Lists of built-in kinds leave apiVersion and kind out of their items; put them back so
        # that every object looks the same whichever way it was read.
        kind = {"apiVersion": resource.api_version, "kind": resource.kind}
        items: list[Object] = []
        token = ""
        while True:
            page = query + ([("continue", token)] if token else [])
            body = self._json("GET", path, page, accept=accept)
            items += [kind | item for item in body.get("items") or []]
            meta = body.get("metadata") or {}
            # The pages share the first page's snapshot; its version is the list's. An expired
            # token is a 410 (WatchExpired): the caller lists again from the start.
            token = str(meta.get("continue") or "")
            if not token:
                return ObjectList(items, str(meta.get("resourceVersion", "")))

    def create(self, resource: Resource, obj: Object) -> Object:
        namespace = obj.get("metadata", {}).get("namespace") if resource.namespaced else None
        return self._json("POST", _path(resource, namespace), body=obj)

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        subresource: str | None = None,
        namespace: str | None = None,
    ) -> Object:
        # Named here, never left to the client: its generated core methods default to JSON Patch,
        # which its transport turns into a strategic merge patch, whose list rules differ from
        # the RFC 7386 patches the writers compute (and which custom resources reject).
        path = _path(resource, namespace, name, subresource)
        return self._json("PATCH", path, body=patch, content_type=MERGE_PATCH)

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        uid: str | None = None,
    ) -> None:
        options: Object = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        self._json("DELETE", _path(resource, namespace, name), body=options)

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        label_selector: str | None = None,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        field_selector: str | None = None,
    ) -> Iterator[WatchEvent]:
        query = [("watch", "true"), ("resourceVersion", resource_version)]
        query += [("timeoutSeconds", str(timeout_seconds)), ("allowWatchBookmarks", "true")]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        # The server ends the stream at timeoutSeconds; the read timeout, applied to each read,
        # catches a stream gone silent before that (WATCH_IDLE_SECONDS).
        read_timeout = min(timeout_seconds + self._read_timeout, self._watch_idle_seconds)
        path = _path(resource, namespace, required=False)
        # The request goes out now, so a refused connection or a 4xx fails this call.
        accept = METADATA_ONLY_WATCH if resource.metadata_only else JSON
        response = self._request("GET", path, query, read_timeout=read_timeout, accept=accept)
        return _events(response, path, read_timeout)

    def _json(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Object | None = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> Object:
        response = self._request(method, path, query, body, content_type, accept=accept)
        try:
            data = response.data
        except OSError as error:
            raise Unavailable(f"{method} {path}: {error}") from error
        try:
            decoded = decode(data)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise KubeError(f"{method} {path}: the response is not a JSON object: {data[:200]!r}")
        return decoded

    def _request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Object | None = None,
        content_type: str = JSON,
        read_timeout: float | None = None,
        accept: str = JSON,
    ) -> Response:
        headers = {"Accept": accept, "Content-Type": content_type}
        timeout = (self._connect_timeout, read_timeout or self._read_timeout)
        for attempt in range(THROTTLE_RETRIES + 1):
            response = self._transport.request(method, path, query, headers, body, timeout)
            if 200 <= response.status < 300:
                return response
            try:
                data = response.data
            except OSError:
                data = b""
            error = _error(response.status, data, f"{method} {path}")
            if isinstance(error, Unavailable):
                wait = parse_retry_after(response.headers.get("Retry-After"))
                if wait is not None:
                    error.retry_after = min(wait, RETRY_AFTER_CAP_SECONDS)
                    if attempt < THROTTLE_RETRIES:
                        self._sleep(error.retry_after)
                        continue
            raise error
        raise AssertionError("unreachable: the last attempt returns or raises")


def load_kube(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    connect_timeout: float = 5.0,
    read_timeout: float = 30.0,
) -> ClientKube:
    """In-cluster config without ``kubeconfig``, else that file (several joined with ``:``, as in
    KUBECONFIG) with ``context`` or its current one; both time out rather than hang."""
    if kubeconfig is None:
        if context is not None:
            raise ValueError("a context needs a kubeconfig: the in-cluster config has none")
        transport: Transport = in_cluster_transport()
    else:
        transport = kubeconfig_transport(kubeconfig, context)
    return ClientKube(transport, connect_timeout=connect_timeout, read_timeout=read_timeout)


def _path(
    resource: Resource,
    namespace: str | None,
    name: str | None = None,
    subresource: str | None = None,
    *,
    required: bool = True,
) -> str:
    # The same scope rules as the in-memory server, checked before anything goes out.
    if resource.namespaced and required and not namespace:
        raise Invalid(f"{resource.plural} are namespaced: a namespace is required")
    if not resource.namespaced and namespace:
        raise Invalid(f"{resource.plural} are cluster-scoped: no namespace may be given")
    parts = ["apis", resource.group, resource.version] if resource.group else ["api", resource.version]
    if namespace:
        parts += ["namespaces", namespace]
    parts += [resource.plural, *(p for p in (name, subresource) if p is not None)]
    return "/" + "/".join(quote(part, safe="") for part in parts)


def _error(status: int, data: bytes, what: str) -> KubeError:
    try:
        body = decode(data)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"message": data[:200].decode(errors="replace")}
    reason, message = body.get("reason") or "", body.get("message") or ""
    text = f"{what}: {status} {reason}: {message}"
    if status in (401, 403):
        return Forbidden(text)
    if status == 404:
        return NotFound(text)
    if status == 409:
        return AlreadyExists(text) if reason == "AlreadyExists" else Conflict(text)
    if status in (400, 422):
        return Invalid(text)
    if status == 410:
        return WatchExpired(text)
    if status == 429 or status >= 500:
        return Unavailable(text)
    return KubeError(text)


def _events(response: Response, path: str, idle_seconds: float) -> Iterator[WatchEvent]:
    try:
        for line in _lines(response):
            try:
                event = decode(line)
            except ValueError as error:
                raise Unavailable(f"WATCH {path}: a malformed event: {line[:200]!r}") from error
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                raise _error(int(status.get("code") or 500), json.dumps(status).encode(), f"WATCH {path}")
            if event.get("type") in _WATCH_TYPES:
                yield WatchEvent(event["type"], event["object"])
    except TimeoutError:
        # Silent: nothing, not even a bookmark, for idle_seconds. Ended as the server ends it at
        # its timeout, so the caller resumes from its resourceVersion at once (no backoff, no
        # list); a server that is really gone fails that next request.
        log.info("watch silent; opening it again", extra={"path": path, "idleSeconds": idle_seconds})
    except OSError as error:
        raise Unavailable(f"WATCH {path}: {error}") from error
    finally:
        # Leaving early must not hand a half-read stream back to the pool.
        response.close()
        response.release_conn()


def _lines(response: Response) -> Iterator[bytes]:
    pending = b""
    while True:
        # read1 returns what has arrived, chunked or not, instead of waiting to fill a buffer.
        data = response.read1(65536)
        if not data:
            break
        *complete, pending = (pending + data).split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending
