# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube when things go wrong: HTTP statuses as typed errors, servers down or silent, no config."""

from __future__ import annotations

import socket
import time

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.adapters.kube.kube_transport import InClusterConfigError
from deckhouse_gpu.ports.kube import (
    NODES,
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    KubeError,
    NotFound,
    Unavailable,
    WatchExpired,
)
from testkit.waiting import free_port
from tests.support import kube_client_fixtures
from tests.support.kube_client_fixtures import write_kubeconfig

# The shared fixtures, bound here so that pytest finds them for this module's tests.
server, kube = kube_client_fixtures.server, kube_client_fixtures.kube


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [
        (400, "BadRequest", Invalid),
        (401, "Unauthorized", Forbidden),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", WatchExpired),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", Unavailable),
        (500, "InternalError", Unavailable),
        (503, "ServiceUnavailable", Unavailable),
    ],
)
def test_status_codes_map_to_typed_errors(kube, server, code, reason, error):
    server.fail_next(code, reason)
    with pytest.raises(error) as caught:
        kube.get(NODES, "node-a")
    assert type(caught.value) is error
    assert f"{code} {reason}" in str(caught.value)
    assert len(server.requests) == 1  # no silent retries


@pytest.mark.parametrize(("code", "reason"), [(401, "Unauthorized"), (403, "Forbidden")])
def test_missing_credentials_or_rbac_are_forbidden_on_every_verb(kube, server, code, reason):
    server.kube.create(NODES, {"metadata": {"name": "node-a"}})
    calls = [
        lambda: kube.list(NODES),
        lambda: kube.create(NODES, {"metadata": {"name": "node-b"}}),
        lambda: kube.patch(NODES, "node-a", {"metadata": {"labels": {"a": "b"}}}),
        lambda: kube.delete(NODES, "node-a"),
        # A refused watch fails at the call, before any event is read.
        lambda: kube.watch(NODES, server.kube.resource_version, timeout_seconds=5),
    ]
    server.fail_next(code, reason, times=len(calls), message="nodes is forbidden")
    for call in calls:
        with pytest.raises(Forbidden, match=f"{code} {reason}: nodes is forbidden"):
            call()
    assert len(server.requests) == len(calls)  # refused once each, never retried
    assert server.kube.get(NODES, "node-a")["metadata"]["name"] == "node-a"


def test_other_statuses_are_plain_kube_errors(kube, server):
    server.fail_next(405, "MethodNotAllowed")
    with pytest.raises(KubeError) as caught:
        kube.patch(NODES, "node-a", {"metadata": {}})
    assert type(caught.value) is KubeError


def test_a_server_that_is_down_is_unavailable_quickly(tmp_path):
    connect = 30.0
    kube = load_kube(write_kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}"), connect_timeout=connect)
    began = time.monotonic()
    with pytest.raises(Unavailable):
        kube.get(NODES, "node-a")
    with pytest.raises(Unavailable):
        kube.patch(NODES, "node-a", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(Unavailable):
        kube.watch(NODES, "1", timeout_seconds=5)
    # Refused at once: the three calls together waited less than one connect timeout.
    assert time.monotonic() - began < connect
    kube.close()


def _connections(server: socket.socket) -> int:
    """How many connections the silent server's backlog holds: one per attempt of the client."""
    server.setblocking(False)
    count = 0
    while True:
        try:
            accepted, _ = server.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


def test_a_server_that_never_answers_times_out_as_unavailable(tmp_path):
    with socket.socket() as silent:  # accepts connections (backlog) but never responds
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        kube = load_kube(write_kubeconfig(tmp_path, url), connect_timeout=1, read_timeout=0.2)
        with pytest.raises(Unavailable):
            kube.get(NODES, "node-a")
        # A GET is retried once (for a stale pooled connection), and no more: counted, not timed.
        assert _connections(silent) == 2
        silent.setblocking(True)
        with pytest.raises(Unavailable):
            kube.create(NODES, {"metadata": {"name": "node-a"}})
        assert _connections(silent) == 1  # a write is never sent twice
        kube.close()


def test_without_a_kubeconfig_it_uses_the_in_cluster_config(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(InClusterConfigError, match="KUBERNETES_SERVICE_HOST/PORT are not set"):
        load_kube(None)
