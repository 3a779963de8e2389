# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""HTTPS to one API server with the standard library: a small pool of keep-alive connections.

What a pod needs (one server, a CA, a bearer token, streamed watches) fits in ``http.client``;
urllib3 would add about 5 MiB per process (it loads ``importlib.metadata`` to probe for HTTP/2),
and every GPU node runs two of these processes. Requests are safe to send from many threads: each
takes a connection of its own and gives it back once its response is read to the end.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlencode, urlsplit

from deckhouse_gpu.ports.kube import Object, Unavailable

IDLE_CONNECTIONS = 4  # kept open between requests; a component sends a few at a time at most
# Sending a request again is safe only where the server cannot have acted on it twice; these are
# the methods urllib3 retries after a failed read, and it is the same rule here.
IDEMPOTENT = frozenset(("GET", "HEAD", "PUT", "DELETE", "OPTIONS"))


class PooledResponse:
    """A response whose connection goes back to the pool once the body is read or closed."""

    def __init__(self, response: http.client.HTTPResponse, release: Callable[[bool], None]) -> None:
        self._response = response
        self._release: Callable[[bool], None] | None = release
        self.status = response.status
        self.headers = response.headers

    @property
    def data(self) -> bytes:
        try:
            body = self._response.read()
        except http.client.HTTPException as error:  # the body ended early: a torn connection
            self._finish(reusable=False)
            raise ConnectionError(f"the response was cut short: {error!r}") from error
        except OSError:
            self._finish(reusable=False)
            raise
        self._finish(reusable=not self._response.will_close)
        return body

    def read1(self, size: int) -> bytes:
        try:
            chunk = self._response.read1(size)
        except http.client.HTTPException as error:
            self._finish(reusable=False)
            raise ConnectionError(f"the stream was cut short: {error!r}") from error
        if not chunk:
            self._finish(reusable=not self._response.will_close)
        return chunk

    def close(self) -> None:
        # Leaving a body unread: the connection cannot carry another request.
        self._finish(reusable=self._response.isclosed() and not self._response.will_close)

    def release_conn(self) -> None:
        self.close()

    def _finish(self, reusable: bool) -> None:
        release, self._release = self._release, None
        if release is not None:
            if not reusable:
                self._response.close()
            release(reusable)


def _keepalive(sock: socket.socket) -> None:
    """TCP keepalive probes, as client-go sends: a long watch notices a vanished server."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 30), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _dropped(connection: http.client.HTTPSConnection) -> bool:
    """An idle keep-alive connection that has something to read was closed by the server."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class StdlibTransport:
    """One HTTPS server, a bearer token and a CA bundle, over ``http.client``."""

    def __init__(self, server: str, token: Callable[[], str], ca_file: str | None) -> None:
        self.server = server.rstrip("/")
        parts = urlsplit(self.server)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"{server!r} is not an https:// server address")
        self._host, self._port = parts.hostname, parts.port or 443
        self._token = token
        if ca_file:
            self._context = ssl.create_default_context(cafile=ca_file)
        else:  # only for tests: the pod always has its CA
            self._context = ssl._create_unverified_context()  # noqa: S323
        self._idle: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> PooledResponse:
        target = path + (f"?{urlencode(list(query))}" if query else "")
        sent = {**headers, "Authorization": f"Bearer {self._token()}"}
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        for attempt in (1, 2):
            connection, reused = self._connection(timeout[0])
            sent_fully = False
            try:
                if not reused:
                    connection.connect()
                    _keepalive(connection.sock)
                connection.sock.settimeout(timeout[1])
                connection.request(method, target, body=data, headers=sent)
                sent_fully = True
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                # One retry, as urllib3's: a request that never left, or one the server cannot have
                # acted on twice (a pooled connection the server had closed fails this way).
                if attempt == 1 and (not sent_fully or method in IDEMPOTENT):
                    continue
                raise Unavailable(f"{method} {path}: {error!r}") from error
            return PooledResponse(response, self._releaser(connection))
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _connection(self, connect_timeout: float) -> tuple[http.client.HTTPSConnection, bool]:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if not _dropped(connection):
                    return connection, True
                connection.close()
        fresh = http.client.HTTPSConnection(
            self._host, self._port, timeout=connect_timeout, context=self._context
        )
        return fresh, False

    def _releaser(self, connection: http.client.HTTPSConnection) -> Callable[[bool], None]:
        return lambda reusable: self._give_back(connection, reusable)

    def _give_back(self, connection: http.client.HTTPSConnection, reusable: bool) -> None:
        if reusable:
            with self._lock:
                if len(self._idle) < IDLE_CONNECTIONS:
                    self._idle.append(connection)
                    return
        connection.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
