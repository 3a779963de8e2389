# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A client chosen as kubectl chooses one: the kubeconfig's current context or the one named, files
joined as in KUBECONFIG, and the context's namespace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.adapters.kube.kube_user import KubeconfigError, load_user_kube
from deckhouse_gpu.ports.kube import NODES
from testkit.fake_apiserver import FakeApiServer


@pytest.fixture
def servers() -> Iterator[tuple[FakeApiServer, FakeApiServer]]:
    with FakeApiServer() as first, FakeApiServer() as second:
        first.kube.create(NODES, {"metadata": {"name": "in-a"}})
        second.kube.create(NODES, {"metadata": {"name": "in-b"}})
        yield first, second


def _config(path: Path, contexts: dict[str, tuple[str, str | None]], current: str | None) -> str:
    """``contexts``: name -> (server URL, namespace or None)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"c-{n}", "cluster": {"server": url}} for n, (url, _) in contexts.items()],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": n, "context": {"cluster": f"c-{n}", "user": "u", **({"namespace": ns} if ns else {})}}
            for n, (_, ns) in contexts.items()
        ],
    }
    if current:
        config["current-context"] = current
    path.write_text(json.dumps(config))
    return str(path)


def _nodes(client) -> list[str]:
    return [n["metadata"]["name"] for n in client.list(NODES).items]


def test_the_current_context_or_the_one_named_with_its_namespace(servers, tmp_path) -> None:
    first, second = servers
    path = _config(tmp_path / "config", {"a": (first.url, "team-a"), "b": (second.url, None)}, "a")
    client, namespace = load_user_kube(path)
    assert (_nodes(client), namespace) == (["in-a"], "team-a")
    client.close()
    client, namespace = load_user_kube(path, "b")
    assert (_nodes(client), namespace) == (["in-b"], "default")
    client.close()
    direct = load_kube(path, context="b")  # the components' loader takes a context too
    assert _nodes(direct) == ["in-b"]
    direct.close()


def test_files_joined_as_in_kubeconfig(servers, tmp_path) -> None:
    first, second = servers
    one = _config(tmp_path / "one", {"a": (first.url, None)}, "a")
    two = _config(tmp_path / "two", {"b": (second.url, "team-b")}, None)
    client, namespace = load_user_kube(f"{one}:{two}", "b")
    assert (_nodes(client), namespace) == (["in-b"], "team-b")
    client.close()


def test_what_cannot_be_used_is_one_error(servers, tmp_path) -> None:
    first, _ = servers
    path = _config(tmp_path / "config", {"a": (first.url, None)}, "a")
    with pytest.raises(KubeconfigError, match='context "nope" not found in kubeconfig'):
        load_user_kube(path, "nope")
    with pytest.raises(KubeconfigError, match="No configuration found"):
        load_user_kube(str(tmp_path / "missing"))
    (tmp_path / "broken").write_text("{}")
    with pytest.raises(KubeconfigError):
        load_user_kube(str(tmp_path / "broken"))
    with pytest.raises(ValueError, match="needs a kubeconfig"):
        load_kube(None, context="a")
