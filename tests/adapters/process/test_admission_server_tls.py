# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The webhook's HTTPS server and its certificate: reloaded when the Secret's files change, kept
when an update is broken, refused at start when it does not load; and clients that stall or fail
the handshake, which must not stop the others."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.process.admission_server import CertificateError, serve_admission
from tests.adapters.process import admission_tls
from tests.adapters.process.admission_tls import Served, call, echo, issue, mount, peer_serial

# The echoing server on loopback with a fresh certificate (bound here for pytest).
served = admission_tls.served


def test_a_renewed_certificate_is_served_on_the_next_connection(served: Served) -> None:
    first = served.connect()
    assert call(first, "GET", "/healthz")[0] == 200
    assert peer_serial(first) == served.issued.serial
    renewed = issue()
    mount(served.directory, renewed)
    second = served.connect(renewed.ca)
    assert call(second, "GET", "/healthz")[0] == 200
    assert peer_serial(second) == renewed.serial
    # the old connection keeps its session; a new one trusting only the old CA no longer verifies
    assert call(first, "GET", "/healthz")[0] == 200
    with pytest.raises(ssl.SSLCertVerificationError):
        call(served.connect(served.issued.ca), "GET", "/healthz")


def test_a_broken_update_keeps_the_previous_certificate(served: Served) -> None:
    (served.directory / "tls.crt").write_bytes(issue().crt)  # a certificate without its key
    connection = served.connect()
    status, body = call(connection, "GET", "/readyz")
    assert status == 200
    assert body["detail"].startswith("certificate loaded; the last reload failed: cannot load ")
    assert peer_serial(connection) == served.issued.serial
    fixed = issue()
    mount(served.directory, fixed)
    connection = served.connect(fixed.ca)
    assert call(connection, "GET", "/readyz") == (200, {"ok": True, "detail": "certificate loaded"})
    assert peer_serial(connection) == fixed.serial


def test_a_silent_client_does_not_block_the_others(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=5):  # never sends a ClientHello
        assert call(served.connect(), "GET", "/healthz")[0] == 200


def test_a_client_that_fails_the_handshake_does_not_stop_the_server(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")  # plain HTTP on the TLS port
        raw.recv(1024)
    assert call(served.connect(), "GET", "/healthz")[0] == 200


def test_files_that_do_not_load_at_start_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_bytes(issue().crt)
    (tmp_path / "tls.key").write_bytes(issue().key)
    with pytest.raises(CertificateError, match=r"cannot load .*tls\.crt with .*tls\.key"):
        serve_admission(("127.0.0.1", 0), str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), echo)
    with pytest.raises(CertificateError):
        serve_admission(("127.0.0.1", 0), str(tmp_path / "missing.crt"), str(tmp_path / "tls.key"), echo)
