"""The webhook's HTTPS server over real TLS on loopback: AdmissionReviews in and out, probes, bad
bodies, and the certificate reloaded when the Secret's files change."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from deckhouse_gpu.adapters.admission_server import AdmissionServer, CertificateError, serve_admission
from deckhouse_gpu.domain.config.opaque_config import API_VERSION
from deckhouse_gpu.services.config_admission import review as real_review

NOW = datetime.datetime.now(datetime.UTC)
PEM = serialization.Encoding.PEM


@dataclass(frozen=True)
class Issued:
    ca: bytes
    crt: bytes
    key: bytes
    serial: int


def issue(common_name: str = "gpu-dra-controller.d8-gpu.svc") -> Issued:
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"ca of {common_name}")])
    validity = (NOW - datetime.timedelta(minutes=5), NOW + datetime.timedelta(days=1))
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return Issued(ca.public_bytes(PEM), leaf.public_bytes(PEM), key_pem, leaf.serial_number)


def mount(directory: Path, issued: Issued) -> None:
    """Writes the pair as the kubelet updates a Secret volume: new files, then renamed into place."""
    for name, data in (("tls.crt", issued.crt), ("tls.key", issued.key)):
        scratch = directory / f".{name}.new"
        scratch.write_bytes(data)
        os.replace(scratch, directory / name)


def echo(request: Mapping[str, Any]) -> dict[str, Any]:
    return {"uid": request["uid"], "allowed": True, "warnings": [f"seen {request['operation']}"]}


@dataclass
class Served:
    server: AdmissionServer
    directory: Path
    issued: Issued

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def connect(self, ca: bytes | None = None) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cadata=(ca or self.issued.ca).decode())
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    issued = issue()
    mount(tmp_path, issued)
    server = serve_admission(("127.0.0.1", 0), str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), echo)
    yield Served(server, tmp_path, issued)
    server.shutdown()


def call(
    connection: http.client.HTTPSConnection, method: str, path: str, body: bytes | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def admission_review(request: dict[str, Any]) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def peer_serial(connection: http.client.HTTPSConnection) -> int:
    assert isinstance(connection.sock, ssl.SSLSocket)
    der = connection.sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_an_admission_review_is_answered_with_one(served: Served) -> None:
    connection = served.connect()
    status, body = call(
        connection, "POST", "/validate-opaque-config", admission_review({"uid": "u1", "operation": "CREATE"})
    )
    assert status == 200
    assert body == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u1", "allowed": True, "warnings": ["seen CREATE"]},
    }
    # the API server keeps its connections: a second review on the same one
    status, body = call(
        connection, "POST", "/validate-opaque-config", admission_review({"uid": "u2", "operation": "UPDATE"})
    )
    assert (status, body["response"]["uid"]) == (200, "u2")


def test_the_real_review_denies_through_the_server(tmp_path: Path) -> None:
    issued = issue()
    mount(tmp_path, issued)
    server = serve_admission(
        ("127.0.0.1", 0), str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), real_review
    )
    try:
        parameters = {"apiVersion": API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "Exclusive"}}
        request = {
            "uid": "u3",
            "operation": "CREATE",
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
            "object": {
                "spec": {"config": [{"opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters}}]}
            },
        }
        status, body = call(
            Served(server, tmp_path, issued).connect(),
            "POST",
            "/validate-opaque-config",
            admission_review(request),
        )
    finally:
        server.shutdown()
    assert status == 200
    assert body["response"]["allowed"] is False
    assert body["response"]["status"]["message"] == (
        'spec.config[0].opaque.parameters.sharing.strategy: "Exclusive" is not one of TimeSlicing, MPS'
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            b"{not json",
            "the body is not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        (b"", "the body is not JSON: Expecting value: line 1 column 1 (char 0)"),
        (
            b'{"a": "\xff"}',
            "the body is not JSON: 'utf-8' codec can't decode byte 0xff in position 7: invalid start byte",
        ),
        (b"[" * 100_000, None),
        (b"[]", "the body is not a JSON object"),
        (b'{"kind": "AdmissionReview"}', "expected an AdmissionReview of apiVersion admission.k8s.io/v1"),
        (
            b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}',
            "expected an AdmissionReview of apiVersion admission.k8s.io/v1",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "the AdmissionReview has no request object",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []}',
            "the AdmissionReview has no request object",
        ),
    ],
)
def test_a_body_that_is_no_admission_review_is_a_400(served: Served, body: bytes, error: str | None) -> None:
    status, answer = call(served.connect(), "POST", "/validate-opaque-config", body)
    assert status == 400
    if error is not None:
        assert answer == {"error": error}
    else:
        assert answer["error"].startswith("the body is not JSON")


def test_a_body_above_the_limit_is_refused_unread(served: Served) -> None:
    context = ssl.create_default_context(cadata=served.issued.ca.decode())
    head = b"POST /validate-opaque-config HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n"
    with (
        socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(head)
        answer = b"".join(iter(lambda: tls.recv(65536), b"")).decode()  # until the server closes
    assert answer.startswith("HTTP/1.1 413 ")
    assert '{"error": "body of 4194304 bytes is above the limit of 3145728"}' in answer


def test_a_post_without_length_is_a_411(served: Served) -> None:
    connection = served.connect()
    connection.putrequest("POST", "/validate-opaque-config")
    connection.endheaders()
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())) == (411, {"error": "Content-Length is required"})


def test_probes_and_unknown_paths(served: Served) -> None:
    connection = served.connect()
    assert call(connection, "GET", "/healthz") == (200, {"ok": True, "detail": "serving"})
    assert call(connection, "GET", "/readyz") == (200, {"ok": True, "detail": "certificate loaded"})
    status, body = call(connection, "GET", "/metrics")
    assert (status, body["error"]) == (
        404,
        "unknown path /metrics; use POST /validate-opaque-config, /healthz or /readyz",
    )
    status, body = call(connection, "POST", "/validate", b"{}")
    assert status == 404


def test_a_failing_review_is_a_500(tmp_path: Path) -> None:
    issued = issue()
    mount(tmp_path, issued)

    def broken(request: Mapping[str, Any]) -> dict[str, Any]:
        raise RuntimeError("bug")

    server = serve_admission(("127.0.0.1", 0), str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"), broken)
    try:
        status, body = call(
            Served(server, tmp_path, issued).connect(),
            "POST",
            "/validate-opaque-config",
            admission_review({"uid": "u"}),
        )
    finally:
        server.shutdown()
    assert (status, body) == (500, {"error": "the review failed; see the gpu-dra-controller log"})


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
