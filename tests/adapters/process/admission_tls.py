# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the tests of the webhook's HTTPS server (tests/adapters/test_admission_server*.py) share:
certificates issued by a throwaway CA, written as the kubelet updates a Secret volume; the
``served`` fixture, a server on loopback that echoes each review; and calls to it over TLS.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
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

from deckhouse_gpu.adapters.process.admission_server import AdmissionServer, serve_admission

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
