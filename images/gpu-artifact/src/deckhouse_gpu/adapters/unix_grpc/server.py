# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A gRPC server on one Unix socket: an accept thread, a reader thread per connection, a few workers.

Calls are answered by a small pool of workers, as grpcio did: the kubelet sends few at a time, and
a health stream holds a worker for as long as it is open. ``stop(grace)`` refuses new calls, lets
running ones finish for ``grace`` seconds, then ends every call and connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures

from deckhouse_gpu.adapters.unix_grpc.call import Method
from deckhouse_gpu.adapters.unix_grpc.connection import Connection

log = logging.getLogger(__name__)

BACKLOG = 16


class UnixGrpcServer:
    def __init__(self, path: str, workers: int, name: str) -> None:
        """Binds ``path`` at once (an OSError if it cannot), so the socket exists before ``start``."""
        self.path = path
        self._name = name
        self._methods: dict[str, Method] = {}
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(path)
            self._listener.listen(BACKLOG)
        except OSError:
            self._listener.close()
            raise
        self._pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._lock = threading.Condition()
        self._connections: set[Connection] = set()
        self._running = 0
        self._stopping = False
        self._acceptor: threading.Thread | None = None

    def add_service(self, service: str, methods: Mapping[str, Method]) -> None:
        """``service`` is the full name, "<proto package>.<service>", as the caller's stubs use it."""
        for name, method in methods.items():
            self._methods[f"/{service}/{name}"] = method

    def start(self) -> None:
        self._acceptor = threading.Thread(target=self._accept, name=f"{self._name}-accept", daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return  # the listener was shut down by stop()
            connection = Connection(sock, self._methods, self._submit)
            with self._lock:
                if self._stopping:
                    sock.close()
                    return
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name=f"{self._name}-conn", daemon=True
            ).start()

    def _serve(self, connection: Connection) -> None:
        try:
            connection.serve()
        finally:
            with self._lock:
                self._connections.discard(connection)

    def _submit(self, job: Callable[[], None]) -> bool:
        with self._lock:
            if self._stopping:
                return False
            self._running += 1

        def run() -> None:
            try:
                job()
            finally:
                with self._lock:
                    self._running -= 1
                    self._lock.notify_all()

        self._pool.submit(run)
        return True

    def stop(self, grace: float) -> None:
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self._listener.close()
        deadline = time.monotonic() + grace
        with self._lock:
            while self._running and (left := deadline - time.monotonic()) > 0:
                self._lock.wait(left)
            connections = list(self._connections)
        for connection in connections:
            connection.close()
        if self._acceptor is not None:
            self._acceptor.join(timeout=1.0)
        # A handler still running (a prepare behind the node lock) finishes on its own; its answer
        # finds the connection closed.
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._running:
            log.info("calls still running when the server stopped", extra={"calls": self._running})
