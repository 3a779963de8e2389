# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The webhook's HTTPS server over real TLS on loopback: AdmissionReviews in and out, probes, and
bad bodies and failing reviews answered with an error. Certificates and connections are in
test_admission_server_tls.py."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.process.admission_server import serve_admission
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.services.allocation.config_admission import review as real_review
from tests.adapters.process import admission_tls
from tests.adapters.process.admission_tls import Served, admission_review, call, issue, mount

# The echoing server on loopback with a fresh certificate (bound here for pytest).
served = admission_tls.served


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
        parameters = {
            "apiVersion": LEGACY_API_VERSION,
            "kind": "GPUConfig",
            "sharing": {"strategy": "Exclusive"},
        }
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
