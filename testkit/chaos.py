# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Faults in front of the fake API server: with a seed and a rate, a request is answered with 409
(writes only), 429 with Retry-After, 500 or 503, its connection is dropped unanswered, it is
delayed, or (a watch) it ends at once with 410 Gone.

Install with ``server.interceptor = Chaos(seed, rate)``. A faulted request never reaches the store,
so a fault never half-applies a write. Whether a request is faulted depends only on the seed, its
method and path and how many requests for that method and path came before it, so a run's faults
do not depend on how the threads of the other components interleave.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

from testkit.fake_apiserver import RecordedRequest
from testkit.fake_apiserver_routes import event_line, status

WRITES = ("POST", "PATCH", "PUT", "DELETE")
# Fault kinds by the requests they may hit.
COMMON = ("throttle", "error", "unavailable", "reset", "delay")
WRITE_ONLY = ("conflict",)
WATCH_ONLY = ("gone",)
KINDS = (*COMMON, *WRITE_ONLY, *WATCH_ONLY)
_ANSWERS = {
    "conflict": (409, "Conflict"),
    "throttle": (429, "TooManyRequests"),
    "error": (500, "InternalError"),
    "unavailable": (503, "ServiceUnavailable"),
}


def is_watch(request: RecordedRequest) -> bool:
    return request.method == "GET" and request.query.get("watch") in ("true", "1")


def component_of(request: RecordedRequest) -> str:
    """The component a request came from: the chaos world gives each one its own bearer token."""
    token = (request.authorization or "").removeprefix("Bearer ").strip()
    return token or "anonymous"


class Chaos:
    """The interceptor: decides, answers and counts."""

    def __init__(
        self,
        seed: int,
        rate: float,
        *,
        kinds: tuple[str, ...] = KINDS,
        delay_seconds: tuple[float, float] = (0.02, 0.2),
        retry_after: int = 1,
        exempt: tuple[str, ...] = ("/version",),
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"the fault rate must be within [0, 1], not {rate}")
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)}")
        self.seed, self.rate, self.kinds = seed, rate, kinds
        self.delay_seconds, self.retry_after, self.exempt = delay_seconds, retry_after, exempt
        self.enabled = True
        self._lock = threading.Lock()
        self._seen: Counter[tuple[str, str]] = Counter()
        self.injected: Counter[str] = Counter()  # fault kind -> how many
        self.by_component: Counter[str] = Counter()  # component -> faults it got

    def choose(self, request: RecordedRequest) -> str | None:
        """The fault for this request, or None; deterministic for a seed (see the module doc)."""
        if not self.enabled or self.rate <= 0.0 or request.path in self.exempt:
            return None
        key = (request.method, request.path + ("?watch" if is_watch(request) else ""))
        with self._lock:
            self._seen[key] += 1
            count = self._seen[key]
        draw = random.Random(f"{self.seed}:{key[0]}:{key[1]}:{count}")  # noqa: S311 - not security
        if draw.random() >= self.rate:
            return None
        allowed = [
            kind
            for kind in self.kinds
            if kind in COMMON
            or (kind in WRITE_ONLY and request.method in WRITES)
            or (kind in WATCH_ONLY and is_watch(request))
        ]
        return draw.choice(allowed) if allowed else None

    def __call__(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> bool:
        kind = self.choose(request)
        if kind is None:
            return False
        with self._lock:
            self.injected[kind] += 1
            self.by_component[component_of(request)] += 1
        if kind == "delay":
            low, high = self.delay_seconds
            time.sleep(random.Random(f"{self.seed}:{request.path}:delay").uniform(low, high))  # noqa: S311
            return False  # then served as usual
        if kind == "reset":
            _drop(handler)
        elif kind == "gone":
            _gone(handler)
        else:
            code, reason = _ANSWERS[kind]
            headers = {"Retry-After": str(self.retry_after)} if code == 429 else {}
            _answer(handler, code, reason, headers)
        return True

    def summary(self) -> dict[str, int]:
        with self._lock:
            return {kind: self.injected.get(kind, 0) for kind in KINDS}


def _answer(handler: BaseHTTPRequestHandler, code: int, reason: str, headers: dict[str, str]) -> None:
    data = json.dumps(status(code, reason, f"chaos: injected {reason}")).encode()
    handler.send_response(code)
    for name, value in {**headers, "Content-Type": "application/json"}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _drop(handler: BaseHTTPRequestHandler) -> None:
    """No answer: the connection closes with a reset (SO_LINGER 0) as a crashed peer's would."""
    handler.close_connection = True
    with contextlib.suppress(OSError):  # already gone
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _gone(handler: BaseHTTPRequestHandler) -> None:
    """A watch the server ends at once: 200, then an ERROR event with a 410 Expired Status."""
    chunked = getattr(getattr(handler.server, "fake", None), "chunked", True)
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    if chunked:
        handler.send_header("Transfer-Encoding", "chunked")
    else:
        handler.send_header("Connection", "close")
        handler.close_connection = True
    handler.end_headers()
    line = event_line("ERROR", status(410, "Expired", "chaos: too old resource version"))
    try:
        if chunked:
            handler.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
        else:
            handler.wfile.write(line)
        handler.wfile.flush()
    except OSError:  # the client went away
        handler.close_connection = True
