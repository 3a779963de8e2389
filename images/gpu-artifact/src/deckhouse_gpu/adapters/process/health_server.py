# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""HTTP health endpoints for the kubelet's probes (``/metrics`` has a server of its own,
adapters/process/metrics_server.py, on loopback behind the pod's kube-rbac-proxy).

``/readyz`` is 200 only when the last pass succeeded; ``/healthz`` is 200 unless passes have
failed for longer than ``unhealthy_after`` seconds (a restart may then help: new connections,
fresh state). Both answer with a small JSON body an operator can read with curl.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from deckhouse_gpu.ports.health import HealthSource


def serve_health(
    health: HealthSource,
    address: tuple[str, int],
    monotonic: Callable[[], float],
    unhealthy_after: float = 300.0,
    also_ready: Callable[[], bool] | None = None,
) -> ThreadingHTTPServer:
    """``also_ready``: a further condition of readiness (gpu-handler: registered with the kubelet,
    so a rolling update does not remove the old pod before the new one serves the kubelet)."""
    started = monotonic()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            snapshot = health.snapshot()
            body: dict[str, object] = {
                "synced": snapshot.synced,
                "lastSyncOK": snapshot.ok,
                "consecutiveFailures": snapshot.consecutive_failures,
            }
            if snapshot.last_error:
                body["lastError"] = snapshot.last_error
            if self.path not in ("/readyz", "/healthz"):
                body = {"error": f"unknown path {self.path}; use /healthz or /readyz"}
                code = 404
            elif self.path == "/readyz":
                extra = also_ready is None or also_ready()
                body["extraReady"] = extra
                code = 200 if snapshot.ok and extra else 503
            else:
                # Unhealthy only after failing for a long time (or never succeeding since start).
                since = snapshot.failing_since if snapshot.failing_since is not None else started
                failing = not snapshot.ok and monotonic() - since >= unhealthy_after
                code = 503 if failing else 200
            self._send(code, json.dumps(body).encode(), "application/json")

        def _send(self, code: int, payload: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the structured log

    server = ThreadingHTTPServer(address, Handler)
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server
