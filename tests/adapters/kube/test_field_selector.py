# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Field selectors: a node component watches only its own Node, slices and Pods, by the fields the
API server offers (``metadata.name``, ``spec.nodeName``, ``spec.driver``, ``status.phase``)."""

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.ports.kube import NODES, PODS, Invalid
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
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


@pytest.mark.parametrize("selector", ["spec.unknown=w1", "metadata.name", "status.podIP=10.0.0.1"])
def test_memory_refuses_fields_the_server_does_not_offer(selector):
    with pytest.raises(Invalid, match="field selector"):
        MemoryKube().list(NODES, field_selector=selector)


def test_memory_selects_pods_by_node_and_phase_with_every_term():
    kube = MemoryKube()
    for name, node in (("a", "w1"), ("b", "w2"), ("c", "")):
        spec = {"nodeName": node} if node else {}
        kube.create(PODS, {"metadata": {"name": name, "namespace": "ns"}, "spec": spec})
    kube.patch(PODS, "b", {"status": {"phase": "Running"}}, subresource="status", namespace="ns")

    def names(selector: str) -> list[str]:
        return [p["metadata"]["name"] for p in kube.list(PODS, field_selector=selector).items]

    assert names("spec.nodeName=w1") == ["a"]
    assert names("spec.nodeName!=") == ["a", "b"]
    assert names("status.phase=Pending,spec.nodeName!=") == ["a"]  # every term must hold
    assert names("spec.nodeName==w2") == ["b"]


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
