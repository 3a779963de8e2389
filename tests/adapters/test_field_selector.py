# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``metadata.name`` field selectors: a node component watches only its own Node."""

import pytest

from deckhouse_gpu.adapters.kube_client import load_kube
from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.ports.kube import NODES, Invalid
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig


def two_nodes(kube: MemoryKube) -> None:
    kube.create(NODES, {"metadata": {"name": "w1"}})
    kube.create(NODES, {"metadata": {"name": "w2"}})


def test_memory_list_and_watch_by_name():
    kube = MemoryKube()
    two_nodes(kube)
    listed = kube.list(NODES, field_selector="metadata.name=w2")
    assert [n["metadata"]["name"] for n in listed.items] == ["w2"]
    events = kube.watch(NODES, listed.resource_version, field_selector="metadata.name=w2", timeout_seconds=1)
    kube.patch(NODES, "w1", {"metadata": {"labels": {"a": "b"}}})
    kube.patch(NODES, "w2", {"metadata": {"labels": {"a": "b"}}})
    first = next(events)
    assert (first.type, first.object["metadata"]["name"]) == ("MODIFIED", "w2")


@pytest.mark.parametrize("selector", ["spec.nodeName=w1", "metadata.name", "metadata.name=a,metadata.name=b"])
def test_memory_refuses_other_field_selectors(selector):
    with pytest.raises(Invalid, match=r"metadata\.name=<name>"):
        MemoryKube().list(NODES, field_selector=selector)


def test_client_sends_the_field_selector(tmp_path):
    with FakeApiServer() as server:
        two_nodes(server.kube)
        client = load_kube(write_kubeconfig(tmp_path, server.url))
        listed = client.list(NODES, field_selector="metadata.name=w1")
        assert [n["metadata"]["name"] for n in listed.items] == ["w1"]
        assert server.requests[-1].query["fieldSelector"] == "metadata.name=w1"
        assert client.server_version() == (1, 35)  # the fake reports "35+", as managed clusters do
        server.kube.version = (1, 34)
        assert client.server_version() == (1, 34)
