# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A TCP proxy on loopback in front of the API server, as a load balancer is in a cluster.

It passes TLS through untouched (the client still checks the API server's certificate, which
names 127.0.0.1) and counts the connections its one client opens: what a component sends while the
API server is down, when every failed request opens a new one.

``silence()`` makes it a load balancer that lost its flows: every connection open then stays open
and forwards nothing more either way (the API server's events and bookmarks go nowhere, the
client's requests are never answered), while connections opened later forward as before. Only a
client that gives up on a silent connection (a read timeout) gets through again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class TcpProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self.accepted: list[float] = []  # monotonic time of each connection a client opened
        self._open: list[tuple[socket.socket, socket.socket]] = []
        self._silenced: set[socket.socket] = set()  # the client ends of the silenced connections
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    def connections_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(start <= at < end for at in self.accepted)

    def open_connections(self) -> int:
        """Connections open now: a component's watches, each on its own, and its pooled requests."""
        with self._lock:
            return len(self._open)

    def silence(self) -> int:
        """Every connection open now goes silent for good; how many."""
        with self._lock:
            self._silenced |= {client for client, _ in self._open}
            return len(self._open)

    def silent_connections(self) -> int:
        """Silenced connections still open: those their client has not given up yet."""
        with self._lock:
            return sum(client in self._silenced for client, _ in self._open)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            pairs = list(self._open)
        for client, server in pairs:
            for end in (client, server):
                with contextlib.suppress(OSError):
                    end.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted.append(time.monotonic())
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
            except OSError:
                client.close()  # the API server is down: the client sees the connection drop
                continue
            server.settimeout(None)
            with self._lock:
                self._open.append((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink, client), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, client: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if client not in self._silenced:  # read on and dropped: the TCP stays up
                    sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._open = [pair for pair in self._open if pair[0] is not source and pair[1] is not source]
            if source is client:
                self._silenced.discard(client)
