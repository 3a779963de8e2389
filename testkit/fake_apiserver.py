# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A local HTTP fake of the Kubernetes API server, serving a ``MemoryKube`` over the real REST paths.

It lets the tests run the real ``ClientKube`` (and so the real ``kubernetes`` client, urllib3 and
JSON on the wire) without a cluster. It covers exactly what the adapter sends: get, list, create,
merge patch (main resource and ``/status``), delete with a uid precondition and watch. Every
request is recorded so that a test can assert what went over the wire.
"""

from __future__ import annotations

import functools
import json
import ssl
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import pytest

from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    PODS,
    RESOURCE_SLICES,
    KubeError,
    Resource,
    WatchEvent,
    WatchExpired,
)
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.fake_apiserver_routes import (
    NOT_FOUND,
    HttpError,
    Route,
    decode_body,
    error_status,
    event_line,
    label_selector,
    list_body,
    merge_patch,
    precondition_uid,
    route,
    status,
    watch_params,
    with_namespace,
)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any  # the decoded JSON, the raw text when it was not JSON, None when empty
    authorization: str | None = None


class FakeApiServer:
    """Starts on 127.0.0.1 with an ephemeral port; use it as a context manager."""

    def __init__(
        self,
        kube: MemoryKube | None = None,
        resources: Iterable[Resource] = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, PODS),
        *,
        chunked: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.kube = kube or MemoryKube()
        self.scheme = "https" if tls else "http"
        # Watch streams are chunked, as the real server's; or else end by closing the connection.
        self.chunked = chunked
        self.resources = {(r.group, r.version, r.plural): r for r in resources}
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._injected: deque[HttpError] = deque()
        self._refused: dict[str, HttpError] = {}
        self._revoked: set[str] = set()
        # Called for every request after it is recorded; True: it has answered (or dropped) the
        # request itself. testkit/chaos.py injects its faults here.
        self.interceptor: Callable[[BaseHTTPRequestHandler, RecordedRequest], bool] | None = None
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        if tls is not None:  # as in a cluster: the in-cluster client config speaks only https
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        # A short poll keeps stop() (and so every test's teardown) quick.
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.01)
        self._thread = threading.Thread(target=serve, name="fake-apiserver", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def fail_next(self, code: int, reason: str, times: int = 1, message: str = "injected failure") -> None:
        """Answers the next ``times`` requests with this error status, whatever they ask."""
        with self._lock:
            self._injected.extend([HttpError(code, reason, message)] * times)

    def refuse(self, path: str, code: int, reason: str, message: str = "refused") -> None:
        """Answers every request for ``path`` with this error status from now on (RBAC, a CRD
        that is not installed)."""
        with self._lock:
            self._refused[path] = HttpError(code, reason, message)

    def revoke(self, token: str) -> None:
        """Answers 401 to every request that carries this bearer token from now on, as the API
        server does once a service account token has expired."""
        with self._lock:
            self._revoked.add(token)

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def record(self, request: RecordedRequest) -> HttpError | None:
        with self._lock:
            self._requests.append(request)
            scheme, _, token = (request.authorization or "").partition(" ")
            if scheme.lower() == "bearer" and token in self._revoked:
                return HttpError(401, "Unauthorized", "the token has expired")
            if self._injected:
                return self._injected.popleft()
            return self._refused.get(request.path)

    def route(self, path: str) -> Route:
        return route(path, self.resources)


class _Server(ThreadingHTTPServer):
    # Keep-alive connections park a thread on the next request; don't wait for them on close.
    block_on_close = False
    fake: FakeApiServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked watch streams and keep-alive, as the real server
    # Headers and body go out in separate writes; with Nagle on, each response would wait out
    # the client's delayed ACK (about 40 ms).
    disable_nagle_algorithm = True

    # http.server dispatches a request to the method named do_<METHOD>.
    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeApiServer:
        return cast(_Server, self.server).fake

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode() if length else ""
        body, parsed = decode_body(raw)
        content_type, authorization = self.headers.get("Content-Type"), self.headers.get("Authorization")
        recorded = RecordedRequest(method, url.path, query, content_type, body, authorization)
        injected = self.fake.record(recorded)
        interceptor = self.fake.interceptor
        if injected is None and interceptor is not None and interceptor(self, recorded):
            return
        try:
            if injected is not None:
                raise injected
            if not parsed:
                raise HttpError(400, "BadRequest", "the request body is not valid JSON")
            if method == "GET" and url.path == "/version":
                major, minor = self.fake.kube.server_version()
                self._send(
                    200, {"major": str(major), "minor": f"{minor}+", "gitVersion": f"v{major}.{minor}.0"}
                )
                return
            self._dispatch(method, self.fake.route(url.path), query, body, content_type)
        except HttpError as error:
            self._send(error.code, status(error.code, error.reason, str(error)))
        except KubeError as error:
            code, reason = error_status(error)
            self._send(code, status(code, reason, str(error)))

    def _dispatch(
        self, method: str, route: Route, query: dict[str, str], body: Any, content_type: str | None
    ) -> None:
        kube, resource, namespace, name = self.fake.kube, route.resource, route.namespace, route.name
        if route.subresource not in (None, "status") or (route.subresource and not resource.has_status):
            raise NOT_FOUND
        if name is None and method == "GET" and query.get("watch") in ("true", "1"):
            self._watch(route, query)
        elif name is None and method == "GET":
            self._send(
                200,
                list_body(
                    resource,
                    kube.list(resource, label_selector(query), namespace, query.get("fieldSelector")),
                ),
            )
        elif name is None and method == "POST":
            self._send(201, kube.create(resource, with_namespace(body, namespace)))
        elif name is not None and method == "GET":
            self._send(200, kube.get(resource, name, namespace))
        elif name is not None and method == "PATCH":
            patch = merge_patch(content_type, body)
            self._send(200, kube.patch(resource, name, patch, route.subresource, namespace))
        elif name is not None and method == "DELETE" and route.subresource is None:
            kube.delete(resource, name, namespace, uid=precondition_uid(body))
            self._send(200, status(200, "", "") | {"details": {"name": name, "kind": resource.plural}})
        else:
            raise HttpError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _watch(self, route: Route, query: dict[str, str]) -> None:
        version, timeout = watch_params(query)
        selector, expired = label_selector(query), None
        stream: Iterator[WatchEvent] = iter(())
        try:
            stream = self.fake.kube.watch(
                route.resource, version, selector, route.namespace, timeout, query.get("fieldSelector")
            )
        except WatchExpired as error:
            # Like the real server: a watch from a too old version still answers 200, then says
            # so in an ERROR event.
            expired = error
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.fake.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        try:
            try:
                if expired is not None:
                    raise expired
                for event in stream:
                    self._chunk(event_line(event.type, event.object))
            except WatchExpired as error:
                self._chunk(event_line("ERROR", status(410, "Expired", str(error))))
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):  # the client went away
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        if self.fake.chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def _send(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        yield server
