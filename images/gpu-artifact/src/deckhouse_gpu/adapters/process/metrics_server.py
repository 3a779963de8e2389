# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Two HTTP servers of a component: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz`` for
the kubelet, each on an address of its own.

``/metrics`` listens on loopback in a cluster: the kube-rbac-proxy sidecar of the pod serves it to
Prometheus over HTTPS after checking the scraper's token (some series name the claims and Pods
using a node's GPUs), while the probes stay on the pod's address for the kubelet. The probes
answer a small JSON body an operator can read with curl; ``/metrics`` speaks the Prometheus text
format, or OpenMetrics when the scraper asks for it.
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
# A path's answer from the request's Accept header: (status, body, content type).
Route = Callable[[str], tuple[int, bytes, str]]


def serve_metrics(address: tuple[str, int], registry: CollectorRegistry) -> ThreadingHTTPServer:
    """``/metrics`` alone; starts serving in a daemon thread, ``shutdown()`` it to stop."""

    def metrics(accept: str) -> tuple[int, bytes, str]:
        encoder, content_type = choose_encoder(accept)
        return 200, encoder(registry), content_type

    return _serve(address, {"/metrics": metrics}, "metrics-server")


def serve_probes(address: tuple[str, int], healthy: Probe, ready: Probe) -> ThreadingHTTPServer:
    """``/healthz`` and ``/readyz``; starts serving in a daemon thread, ``shutdown()`` it to stop."""

    def probe(check: Probe) -> Route:
        def answer(_: str) -> tuple[int, bytes, str]:
            ok, detail = check()
            return 200 if ok else 503, json.dumps({"ok": ok, "detail": detail}).encode(), "application/json"

        return answer

    return _serve(address, {"/healthz": probe(healthy), "/readyz": probe(ready)}, "probe-server")


def _serve(address: tuple[str, int], routes: dict[str, Route], name: str) -> ThreadingHTTPServer:
    known = ", ".join(routes)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            route = routes.get(path)
            if route is None:
                error = {"error": f"unknown path {path}; use {known}"}
                self._send(404, json.dumps(error).encode(), "application/json")
                return
            self._send(*route(self.headers.get("Accept") or ""))

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
    threading.Thread(target=serve, name=name, daemon=True).start()
    return server
