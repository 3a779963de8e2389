# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The in-cluster configuration on the ``kubernetes`` client: a pod's API server, CA and rotating
token, against the fake API server over TLS: requests, the token re-read once a minute and after a
401, pooled connections the server dropped, torn connections."""

from __future__ import annotations

import datetime
import ssl
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.config import incluster_config

from deckhouse_gpu.adapters.kube.kube_client import ClientKube
from deckhouse_gpu.adapters.kube.kube_transport import InClusterConfigError, in_cluster_transport
from deckhouse_gpu.ports.kube import NODES, Forbidden, Unavailable
from testkit.api_access import component_of
from testkit.fake_apiserver import FakeApiServer
from tests.adapters.process.admission_tls import issue


@pytest.fixture
def account(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path, dict[str, str]]]:
    """A TLS fake API server, the pod's service account directory and its environment."""
    issued = issue("kubernetes.default.svc")
    (tmp_path / "ca.crt").write_bytes(issued.ca)
    (tmp_path / "server.crt").write_bytes(issued.crt)
    (tmp_path / "server.key").write_bytes(issued.key)
    (tmp_path / "token").write_text("gpu-handler")  # the kubelet writes it without a newline
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


def a_minute_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's in-cluster loader, whose token is a minute old from now on."""

    class Later(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Later:
            return super().now(tz) + datetime.timedelta(seconds=61)

    clock = types.SimpleNamespace(datetime=Later, timedelta=datetime.timedelta)
    monkeypatch.setattr(incluster_config, "datetime", clock)


def test_a_rotated_token_is_sent_once_the_old_one_is_a_minute_old(account, monkeypatch) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))
    kube.list(NODES)
    (directory / "token").write_text("gpu-controller")  # the kubelet rotated it
    kube.list(NODES)  # within the minute: the token read at start
    a_minute_later(monkeypatch)
    kube.list(NODES)
    assert callers(server) == ["gpu-handler", "gpu-handler", "gpu-controller"]


def test_a_401_makes_the_next_request_read_the_token_again(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))
    kube.list(NODES)
    (directory / "token").write_text("gpu-controller")
    server.fail_next(401, "Unauthorized")  # the old token expired before the minute was up
    with pytest.raises(Forbidden, match="401 Unauthorized"):
        kube.list(NODES)  # not repeated: the caller's backoff sends the next request
    kube.list(NODES)
    assert callers(server) == ["gpu-handler", "gpu-handler", "gpu-controller"]


def test_a_token_file_missing_at_a_401_keeps_the_token_held(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))
    (directory / "token").unlink()  # between the kubelet's remove and write
    server.fail_next(401, "Unauthorized")
    with pytest.raises(Forbidden):
        kube.list(NODES)
    kube.list(NODES)
    assert callers(server) == ["gpu-handler", "gpu-handler"]


def test_a_token_file_gone_when_its_minute_is_up_fails_the_request_clearly(account, monkeypatch) -> None:
    _, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory))
    (directory / "token").unlink()
    a_minute_later(monkeypatch)
    with pytest.raises(Unavailable, match="cannot load the credentials"):
        kube.list(NODES)


def test_outside_a_pod_it_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InClusterConfigError, match="KUBERNETES_SERVICE_HOST/PORT are not set"):
        in_cluster_transport({}, tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(InClusterConfigError, match="token file does not exist"):
        in_cluster_transport(env, tmp_path)


def test_an_ipv6_service_address_is_bracketed(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_bytes(issue().ca)
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert in_cluster_transport(env, tmp_path).server == "https://[fd00::1]:443"


def close_after_answering(server: FakeApiServer) -> None:
    """The server answers each request as keep-alive, then closes the connection, as a server
    closes one that stayed idle: the client finds its pooled connection dropped."""

    def close(handler, request) -> bool:
        handler.close_connection = True
        return False

    server.interceptor = close


def test_a_write_on_a_pooled_connection_the_server_dropped_goes_once(account) -> None:
    server, directory, env = account
    kube = ClientKube(in_cluster_transport(env, directory), connect_timeout=1, read_timeout=2)
    close_after_answering(server)
    kube.list(NODES)
    # Idle a moment, so that the close has reached the client: a request sent in the instant the
    # server closes is lost to a race that no HTTP/1.1 client closes (and a write is not resent).
    time.sleep(0.5)
    kube.create(NODES, {"metadata": {"name": "n1"}})
    assert [r.method for r in server.requests].count("POST") == 1
    assert kube.get(NODES, "n1")["metadata"]["name"] == "n1"


def hang_up(server: FakeApiServer) -> None:
    """The server reads each request and closes the connection without an answer."""

    def drop(handler, request) -> bool:
        handler.close_connection = True
        return True

    server.interceptor = drop


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
