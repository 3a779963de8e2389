# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One HTTP port for Prometheus and the kubelet: ``/metrics``, ``/healthz`` and ``/readyz``.

The probes answer a small JSON body an operator can read with curl; ``/metrics`` speaks the
Prometheus text format, or OpenMetrics when the scraper asks for it.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

Probe = Callable[[], tuple[bool, str]]  # (ok, what an operator should know)


def serve_endpoints(
    address: tuple[str, int], registry: CollectorRegistry, healthy: Probe, ready: Probe
) -> ThreadingHTTPServer:
    """Starts serving in a daemon thread; ``shutdown()`` the returned server to stop."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept") or "")
                self._send(200, encoder(registry), content_type)
            elif path in ("/healthz", "/readyz"):
                ok, detail = (healthy if path == "/healthz" else ready)()
                body = json.dumps({"ok": ok, "detail": detail}).encode()
                self._send(200 if ok else 503, body, "application/json")
            else:
                error = {"error": f"unknown path {path}; use /metrics, /healthz or /readyz"}
                self._send(404, json.dumps(error).encode(), "application/json")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes and scrapes every few seconds would drown the structured log

    server = ThreadingHTTPServer(address, Handler)
    server.daemon_threads = True
    # A short poll keeps shutdown() quick on SIGTERM.
    serve = functools.partial(server.serve_forever, poll_interval=0.1)
    threading.Thread(target=serve, name="metrics-server", daemon=True).start()
    return server
