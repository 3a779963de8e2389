# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The in-cluster transport: a pod's API server, CA and rotating token over ``http.client``, without
the ``kubernetes`` package or urllib3, against the fake API server over TLS: requests, pooled
connections, watches, torn connections."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kube_client import ClientKube
from deckhouse_gpu.adapters.kube_http import StdlibTransport
from deckhouse_gpu.adapters.kube_transport import (
    TOKEN_REREAD_SECONDS,
    InClusterConfigError,
    ServiceAccountToken,
    in_cluster_transport,
)
from deckhouse_gpu.ports.kube import NODES, Forbidden, Unavailable
from testkit.api_access import component_of
from testkit.fake_apiserver import FakeApiServer
from tests.adapters.admission_tls import issue


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def account(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path, dict[str, str]]]:
    """A TLS fake API server, the pod's service account directory and its environment."""
    issued = issue("kubernetes.default.svc")
    (tmp_path / "ca.crt").write_bytes(issued.ca)
    (tmp_path / "server.crt").write_bytes(issued.crt)
    (tmp_path / "server.key").write_bytes(issued.key)
    (tmp_path / "token").write_text("gpu-handler\n")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    with FakeApiServer(tls=context) as server:
        host, _, port = server.url.removeprefix("https://").rpartition(":")
        yield server, tmp_path, {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}


def callers(server: FakeApiServer) -> list[str]:
    return [component_of(request.authorization) for request in server.requests]


def test_a_pod_reaches_its_api_server_with_its_token_and_ca(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))
    kube.create(NODES, {"metadata": {"name": "n1", "labels": {"a": "b"}}})
    assert kube.get(NODES, "n1")["metadata"]["labels"] == {"a": "b"}
    assert kube.list(NODES, label_selector="a=b").items[0]["metadata"]["name"] == "n1"
    assert kube.server_version()[0] == 1
    assert set(callers(server)) == {"gpu-handler"}
    kube.close()


def test_a_server_whose_certificate_the_ca_did_not_sign_is_refused(account) -> None:
    _, directory, env = account
    (directory / "ca.crt").write_bytes(issue("someone else").ca)
    kube = ClientKube(in_cluster_transport(env, directory), connect_timeout=1)
    with pytest.raises(Unavailable, match="GET /version"):
        kube.server_version()


def test_http_errors_keep_their_meaning(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))

    server.fail_next(403, "Forbidden", message="no")
    with pytest.raises(Forbidden, match="403 Forbidden: no"):
        kube.get(NODES, "n1")


def test_the_token_is_reread_once_a_minute_and_a_good_one_is_kept(tmp_path: Path) -> None:
    path, clock = tmp_path / "token", Clock()
    path.write_text("first\n")
    token = ServiceAccountToken(path, clock)
    assert token() == "first"
    path.write_text("second")  # the kubelet rotated it
    clock.now = TOKEN_REREAD_SECONDS - 1
    assert token() == "first"
    clock.now = TOKEN_REREAD_SECONDS
    assert token() == "second"
    path.unlink()  # between the kubelet's remove and write: keep the token that works
    clock.now = 2 * TOKEN_REREAD_SECONDS
    assert token() == "second"


def test_an_unreadable_token_fails_the_request_clearly(tmp_path: Path) -> None:
    token = ServiceAccountToken(tmp_path / "token", Clock())
    with pytest.raises(Unavailable, match="cannot read the service account token"):
        token()
    transport = StdlibTransport("https://127.0.0.1:1", token, None)
    with pytest.raises(Unavailable, match="service account token"):
        transport.request("GET", "/version", (), {}, None, (1, 1))


def test_outside_a_pod_it_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InClusterConfigError, match="KUBERNETES_SERVICE_HOST/PORT are not set"):
        in_cluster_transport({}, tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(InClusterConfigError, match="token is missing"):
        in_cluster_transport(env, tmp_path)


def test_an_ipv6_service_address_is_bracketed(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(issue().ca)
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert in_cluster_transport(env, tmp_path).server == "https://[fd00::1]:443"


LAUNCH = """
import sys
from pathlib import Path
from deckhouse_gpu.adapters import kube_transport
from deckhouse_gpu.adapters.kube_client import ClientKube
from deckhouse_gpu.adapters.kube_http import StdlibTransport
from deckhouse_gpu.ports.kube import NODES
kube = ClientKube(kube_transport.in_cluster_transport(account_dir=Path(sys.argv[1])))
kube.list(NODES)
heavy = {"kubernetes", "pydantic", "dateutil", "urllib3"}
print(sorted({name.split(".")[0] for name in sys.modules} & heavy))
"""


def test_in_a_pod_the_kubernetes_package_is_never_loaded(account) -> None:
    server, directory, env = account
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, str(directory)], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
    assert callers(server) == ["gpu-handler"]


def hang_up(server: FakeApiServer) -> None:
    """The server reads each request and closes the connection without an answer."""

    def drop(handler, request) -> bool:
        handler.close_connection = True
        return True

    server.interceptor = drop


def test_a_connection_is_kept_for_the_next_request_and_a_dropped_one_replaced(account) -> None:
    server, directory, env = account
    transport = in_cluster_transport(env, directory)
    kube = ClientKube(transport)
    for _ in range(5):
        kube.list(NODES)
    assert len(transport._idle) == 1  # one keep-alive connection carried all five
    transport._idle[0].sock.shutdown(socket.SHUT_RDWR)  # as if the server had closed it while idle
    kube.create(NODES, {"metadata": {"name": "n1"}})  # a write, so it must go once, on a fresh one
    assert [r.method for r in server.requests].count("POST") == 1
    assert kube.get(NODES, "n1")["metadata"]["name"] == "n1"


def test_a_read_is_retried_once_and_a_write_never_after_it_was_sent(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory), connect_timeout=1, read_timeout=2)
    hang_up(server)
    with pytest.raises(Unavailable, match="GET /api/v1/nodes"):
        kube.list(NODES)
    assert [r.method for r in server.requests] == ["GET", "GET"]
    with pytest.raises(Unavailable, match="POST /api/v1/nodes"):
        kube.create(NODES, {"metadata": {"name": "n1"}})
    assert [r.method for r in server.requests] == ["GET", "GET", "POST"]  # the server may have acted
