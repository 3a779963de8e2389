# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A logging proxy in front of a real kube-apiserver: every request a component sends, counted.

The components reach it over plain HTTP on loopback with a kubeconfig of their own (one proxy per
component, so every request is attributed); it forwards each request over TLS as the cluster's
admin, streams watches through as they come, and records per request the verb (LIST, GET, WATCH,
CREATE, PATCH, DELETE), the path, the query and the bytes it answered. The real tier's "nothing on
a timer" test and the API-load benchmark (benchmarks/api_load.py) read these records.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

# Hop-by-hop headers, and those the proxy sets itself.
_SKIP = frozenset(
    {"connection", "transfer-encoding", "content-length", "keep-alive", "host", "authorization"}
)


@dataclass
class Record:
    """One request, recorded when it arrives; its answer's figures fill in as it goes."""

    at: float  # time.monotonic() when the request arrived
    verb: str
    path: str
    query: dict[str, str]
    status: int = 0
    bytes: int = 0  # the answer's body so far (a watch: what has streamed)
    ended: float | None = None  # time.monotonic() when the answer ended (a watch: when it closed)


def verb_of(method: str, path: str, query: dict[str, str]) -> str:
    if method == "GET":
        if query.get("watch") in ("true", "1"):
            return "WATCH"
        parts = [p for p in path.split("/") if p]
        # /api/v1/<plural>, /api/v1/namespaces/<ns>/<plural>, /apis/<g>/<v>/... : a name ends a GET.
        core = parts[:2] == ["api", "v1"]
        rest = parts[2:] if core else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]
        elif rest[:1] == ["namespaces"]:
            return "GET" if len(rest) == 2 else "LIST"
        return "LIST" if len(rest) == 1 else "GET"
    return {"POST": "CREATE", "PUT": "UPDATE"}.get(method, method)


@dataclass
class CountingProxy:
    upstream: str  # https://host:port
    context: ssl.SSLContext
    records: list[Record] = field(default_factory=list)
    open_watches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> CountingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815 - http.server names

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="counting-proxy", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: '{self.url}'}}}}]\n"
            "users: [{name: u, user: {}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        )
        return path

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def since(self, moment: float) -> list[Record]:
        """Requests that arrived at or after ``moment``."""
        with self._lock:
            return [r for r in self.records if r.at >= moment]

    def received(self) -> int:
        """Bytes answered so far, open watches' streams included: two readings give a window's."""
        with self._lock:
            return sum(r.bytes for r in self.records)

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        arrived = time.monotonic()
        split = urlsplit(handler.path)
        query = dict(parse_qsl(split.query))
        verb = verb_of(handler.command, split.path, query)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        target = urlsplit(self.upstream)
        upstream = http.client.HTTPSConnection(
            target.hostname or "", target.port, context=self.context, timeout=None
        )
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _SKIP}
        record = Record(arrived, verb, split.path, query)
        with self._lock:
            self.records.append(record)
        try:
            upstream.request(handler.command, handler.path, body=body, headers=headers)
            answer = upstream.getresponse()
            record.status = answer.status
            handler.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in _SKIP:
                    handler.send_header(key, value)
            if verb == "WATCH":
                with self._lock:
                    self.open_watches += 1
                try:
                    self._stream(handler, answer, record)
                finally:
                    with self._lock:
                        self.open_watches -= 1
            else:
                data = answer.read()
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)
                record.bytes = len(data)
        except (OSError, http.client.HTTPException):
            handler.close_connection = True
        finally:
            upstream.close()
            record.ended = time.monotonic()

    @staticmethod
    def _stream(handler: BaseHTTPRequestHandler, answer: http.client.HTTPResponse, record: Record) -> None:
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        while True:
            data = answer.read1(65536)
            if not data:
                break
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()
            record.bytes += len(data)
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
        handler.close_connection = True
