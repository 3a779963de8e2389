# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A kubeconfig whose user names a ``tokenFile``: the file is read again once a minute and after a
401, as client-go reads BearerTokenFile, so a token rotated in it is sent without a restart (the
library's loader alone reads it once). The real API server's side: tests/real/test_token_rotation.py."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kube import kube_transport
from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.ports.kube import NODES, Forbidden
from testkit.api_access import component_of
from testkit.fake_apiserver import FakeApiServer


def kubeconfig(directory: Path, server: str, user: dict[str, str]) -> str:
    path = directory / "kubeconfig"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "pod", "user": user}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "pod"}}],
        "current-context": "fake",
    }
    path.write_text(json.dumps(config))
    return str(path)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The transport's monotonic clock, moved by the test (the library's and urllib3's are not)."""
    clock = Clock()
    monkeypatch.setattr(kube_transport, "time", types.SimpleNamespace(monotonic=clock))
    return clock


def callers(server: FakeApiServer) -> list[str]:
    return [component_of(request.authorization) for request in server.requests]


def test_a_rotated_token_file_is_sent_once_the_old_one_is_a_minute_old(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / "token").write_text("gpu-handler\n")  # a trailing newline is not part of the token
    with FakeApiServer() as server:
        kube = load_kube(kubeconfig(tmp_path, server.url, {"tokenFile": "token"}))  # relative to it
        kube.list(NODES)
        (tmp_path / "token").write_text("gpu-controller")
        clock.now += 59
        kube.list(NODES)
        clock.now += 2
        kube.list(NODES)
        kube.close()
    assert callers(server) == ["gpu-handler", "gpu-handler", "gpu-controller"]
    assert server.requests[0].authorization == "Bearer gpu-handler"


def test_a_401_makes_the_next_request_read_the_token_file_again(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / "token").write_text("gpu-handler")
    with FakeApiServer() as server:
        kube = load_kube(kubeconfig(tmp_path, server.url, {"tokenFile": str(tmp_path / "token")}))
        kube.list(NODES)
        (tmp_path / "token").write_text("gpu-controller")
        server.fail_next(401, "Unauthorized")  # the old token's bound object went
        with pytest.raises(Forbidden, match="401"):
            kube.list(NODES)
        kube.list(NODES)
        kube.close()
    assert callers(server) == ["gpu-handler", "gpu-handler", "gpu-controller"]


def test_a_token_file_missing_when_read_again_keeps_the_token_held(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / "token").write_text("gpu-handler")
    with FakeApiServer() as server:
        kube = load_kube(kubeconfig(tmp_path, server.url, {"tokenFile": "token"}))
        (tmp_path / "token").unlink()  # between a writer's remove and write
        clock.now += 61
        kube.list(NODES)
        (tmp_path / "token").write_text("")
        clock.now += 61
        kube.list(NODES)
        (tmp_path / "token").write_text("gpu-controller")
        kube.list(NODES)  # failed reads leave the file due at the next request
        kube.close()
    assert callers(server) == ["gpu-handler", "gpu-handler", "gpu-controller"]


def test_the_token_file_wins_over_an_inline_token_as_in_client_go(tmp_path: Path, clock: Clock) -> None:
    (tmp_path / "token").write_text("gpu-handler")
    with FakeApiServer() as server:
        kube = load_kube(kubeconfig(tmp_path, server.url, {"token": "gpu-controller", "tokenFile": "token"}))
        kube.list(NODES)
        kube.close()
    assert callers(server) == ["gpu-handler"]


def test_an_inline_token_alone_is_sent_as_before(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        kube = load_kube(kubeconfig(tmp_path, server.url, {"token": "gpu-controller"}))
        assert isinstance(kube, ClientKube)
        kube.list(NODES)
        kube.close()
    assert callers(server) == ["gpu-controller"]
