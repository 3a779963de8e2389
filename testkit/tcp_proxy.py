# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A TCP proxy on loopback in front of the API server, as a load balancer is in a cluster.

It passes TLS through untouched (the client still checks the API server's certificate, which
names 127.0.0.1), counts the connections each client opens (what a component sends while the API
server is down: every failed request opens a new one) and can go silent: the connections open at
that moment stay open and forward nothing more, as a load balancer that lost its backend does.
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
        self._open: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    def connections_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(start <= at < end for at in self.accepted)

    def silence_open_connections(self) -> int:
        """The connections open now forward nothing more (and are never closed by the proxy);
        new ones work. The number silenced."""
        with self._lock:
            pairs = list(self._open)
            self._open.clear()
        for _, _, silent in pairs:
            silent.set()
        return len(pairs)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            pairs = list(self._open)
        for client, server, _ in pairs:
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
            silent = threading.Event()
            with self._lock:
                self._open.append((client, server, silent))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink, silent), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, silent: threading.Event) -> None:
        try:
            while data := source.recv(65536):
                if silent.is_set():
                    continue  # swallowed: the peer waits for an answer that never comes
                sink.sendall(data)
        except OSError:
            pass
        if silent.is_set():
            return  # a silent connection is never closed either
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._open = [pair for pair in self._open if pair[0] is not source and pair[1] is not source]
