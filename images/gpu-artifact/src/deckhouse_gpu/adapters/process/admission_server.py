# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The HTTPS endpoint of gpu-dra-controller's validating webhook, plus ``/healthz`` and ``/readyz``.

``POST /validate-opaque-config`` takes an AdmissionReview (``admission.k8s.io/v1``) and answers
one with the ``response`` of the ``review`` callable. The certificate and key come from files of
a mounted Secret (``tls.crt``, ``tls.key``); the kubelet replaces them in place when the hook
renews the certificate, so every new connection first checks whether the files' content changed
and, if it did, loads them into a fresh TLS context. A pair that does not load (a half-written update,
a key of another certificate) keeps the previous context serving and is tried again when the
files change once more. The TLS handshake runs in the connection's own thread, so one slow client
cannot stall the others.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

PATH = "/validate-opaque-config"
MAX_BODY = 3 * 1024 * 1024  # the API server's own request limit; an AdmissionReview is far smaller
CONNECTION_TIMEOUT = 30.0  # handshake, a request or an idle keep-alive connection, in seconds

type Review = Callable[[Mapping[str, Any]], dict[str, Any]]


class CertificateError(RuntimeError):
    """The certificate files cannot be loaded."""


class _Certificates:
    """The TLS context for the current content of the certificate files."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self._lock = threading.Lock()
        self._tried = self._signature()
        self._context = self._load()  # the first pair must load: nothing to serve without it
        self.last_error: str | None = None

    def _signature(self) -> tuple[bytes, bytes] | None:
        # The content, not stat(): a rewrite within one timer tick can keep size and mtime, and
        # the two small files are read only when a connection opens.
        try:
            with open(self.cert_file, "rb") as cert, open(self.key_file, "rb") as key:
                return cert.read(), key.read()
        except OSError:
            return None

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as error:
            raise CertificateError(f"cannot load {self.cert_file} with {self.key_file}: {error}") from error
        return context

    def context(self) -> ssl.SSLContext:
        with self._lock:
            signature = self._signature()
            if signature is not None and signature != self._tried:
                self._tried = signature
                try:
                    self._context = self._load()
                    self.last_error = None
                    log.info("webhook certificate reloaded", extra={"file": self.cert_file})
                except CertificateError as error:
                    self.last_error = str(error)
                    log.warning(
                        "webhook certificate not reloaded, the previous one serves on",
                        extra={"error": str(error)},
                    )
            return self._context


class AdmissionServer(ThreadingHTTPServer):
    """Serves in a daemon thread; ``shutdown()`` stops it and closes the port."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], certificates: _Certificates, review: Review) -> None:
        self.certificates = certificates
        self.review = review
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        raw, client = self.socket.accept()
        # The handshake happens in the handler's thread (_Handler.setup), not in the accept loop.
        tls = self.certificates.context().wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        return tls, client

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("webhook connection failed", extra={"client": str(client_address)}, exc_info=True)

    def shutdown(self) -> None:
        super().shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the API server reuses its connections
    timeout = CONNECTION_TIMEOUT
    server: AdmissionServer

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        self.request.do_handshake()
        super().setup()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/healthz":
            self._json(200, {"ok": True, "detail": "serving"})
        elif path == "/readyz":
            error = self.server.certificates.last_error
            detail = "certificate loaded" + (f"; the last reload failed: {error}" if error else "")
            self._json(200, {"ok": True, "detail": detail})
        else:
            self._json(404, {"error": f"unknown path {path}; use POST {PATH}, /healthz or /readyz"})

    def do_POST(self) -> None:
        if urlsplit(self.path).path != PATH:
            self._json(404, {"error": f"unknown path {self.path}; POST AdmissionReviews to {PATH}"})
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._json(411, {"error": "Content-Length is required"})
            return
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._json(413, {"error": f"body of {length} bytes is above the limit of {MAX_BODY}"})
            return
        body = self.rfile.read(int(length))
        request, problem = _admission_request(body)
        if request is None:
            self._json(400, {"error": problem})
            return
        try:
            response = self.server.review(request)
        except Exception:
            log.exception("review failed", extra={"uid": request.get("uid")})
            self._json(500, {"error": "the review failed; see the gpu-dra-controller log"})
            return
        self._json(
            200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    def _json(self, code: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass  # every admission call and probe would drown the structured log


def _admission_request(body: bytes) -> tuple[Mapping[str, Any] | None, str]:
    """The ``request`` of an AdmissionReview v1, or None and why the body is not one."""
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        return None, f"the body is not JSON: {error}"
    if not isinstance(review, dict):
        return None, "the body is not a JSON object"
    if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview":
        return None, "expected an AdmissionReview of apiVersion admission.k8s.io/v1"
    request = review.get("request")
    if not isinstance(request, dict):
        return None, "the AdmissionReview has no request object"
    return request, ""


def serve_admission(
    address: tuple[str, int], cert_file: str, key_file: str, review: Review
) -> AdmissionServer:
    """Starts serving in a daemon thread; raises ``CertificateError`` when the files do not load."""
    server = AdmissionServer(address, _Certificates(cert_file, key_file), review)
    # A short poll keeps shutdown() quick on SIGTERM.
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="admission", daemon=True
    ).start()
    return server
