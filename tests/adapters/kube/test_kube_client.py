# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube's verbs against a fake API server: the requests it sends and what it makes of the answers."""

from __future__ import annotations

import uuid

import pytest

from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    AlreadyExists,
    Conflict,
    Invalid,
    KubeAPI,
    NotFound,
)
from tests.support import kube_client_fixtures
from tests.support.kube_client_fixtures import GPUS_PATH, TOKEN, WIDGETS, gpu, last

# The shared fixtures, bound here so that pytest finds them for this module's tests.
server, kube = kube_client_fixtures.server, kube_client_fixtures.kube


def test_is_a_kube_api(kube):
    api: KubeAPI = kube
    assert api is kube


def test_create_and_get_custom_and_core_objects(kube, server):
    created = kube.create(PHYSICAL_GPUS, {**gpu("gpu-a"), "unknownField": {"kept": True}})
    assert created["metadata"]["uid"]
    assert created["kind"] == "PhysicalGPU"
    assert created["unknownField"] == {"kept": True}  # raw JSON, no model in between
    sent = last(server)
    assert (sent.method, sent.path, sent.content_type) == ("POST", GPUS_PATH, "application/json")
    scheme, _, token = (sent.authorization or "").partition(" ")
    # The scheme's case is free (RFC 9110): the library's in-cluster loader writes "bearer".
    assert (scheme.lower(), token) == ("bearer", TOKEN)
    assert kube.get(PHYSICAL_GPUS, "gpu-a") == created
    assert last(server).path == f"{GPUS_PATH}/gpu-a"

    kube.create(NODES, {"metadata": {"name": "node-a"}})
    assert last(server).path == "/api/v1/nodes"
    assert kube.get(NODES, "node-a")["apiVersion"] == "v1"
    event = kube.create(EVENTS, {"metadata": {"name": "ev", "namespace": "default"}, "reason": "Test"})
    assert last(server).path == "/api/v1/namespaces/default/events"
    assert kube.get(EVENTS, "ev", namespace="default") == event
    assert last(server).path == "/api/v1/namespaces/default/events/ev"
    kube.create(WIDGETS, {"metadata": {"name": "w", "namespace": "ns"}})
    assert last(server).path == "/apis/example.com/v1/namespaces/ns/widgets"
    assert server.kube.get(WIDGETS, "w", namespace="ns")["metadata"]["name"] == "w"


def test_create_duplicate_is_already_exists(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    with pytest.raises(AlreadyExists, match="already exists"):
        kube.create(PHYSICAL_GPUS, gpu("gpu-a"))


def test_not_found_and_missing_namespace(kube, server):
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "missing")
    sent = len(server.requests)
    with pytest.raises(Invalid, match="namespace is required"):
        kube.get(WIDGETS, "w")
    with pytest.raises(Invalid, match="namespace is required"):
        kube.create(WIDGETS, {"metadata": {"name": "w"}})
    assert len(server.requests) == sent  # refused before anything went out


def test_list_with_label_selectors(kube, server):
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-a", {"vendor": "nvidia", "node": "a"}))
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-b", {"vendor": "amd", "node": "a"}))
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-c", {"vendor": "nvidia", "node": "b"}))

    def names(selector):
        return [o["metadata"]["name"] for o in kube.list(PHYSICAL_GPUS, label_selector=selector).items]

    assert names(None) == ["gpu-a", "gpu-b", "gpu-c"]
    assert "labelSelector" not in last(server).query
    assert names("vendor=nvidia,node!=b") == ["gpu-a"]
    assert last(server).query == {"labelSelector": "vendor=nvidia,node!=b", "limit": "500"}
    assert names("vendor in (amd, intel)") == ["gpu-b"]
    assert names("!vendor") == []
    listed = kube.list(PHYSICAL_GPUS)
    assert listed.resource_version == server.kube.resource_version
    with pytest.raises(Invalid, match="400"):
        kube.list(PHYSICAL_GPUS, label_selector="vendor in nvidia")


def test_list_fills_kind_of_built_in_items_and_filters_by_namespace(kube, server):
    server.kube.create(NODES, {"metadata": {"name": "node-a"}})
    server.kube.create(EVENTS, {"metadata": {"name": "e1", "namespace": "one"}})
    server.kube.create(EVENTS, {"metadata": {"name": "e2", "namespace": "two"}})
    (node,) = kube.list(NODES).items
    assert (node["apiVersion"], node["kind"]) == ("v1", "Node")
    assert [e["metadata"]["name"] for e in kube.list(EVENTS).items] == ["e1", "e2"]
    assert last(server).path == "/api/v1/events"
    assert [e["metadata"]["name"] for e in kube.list(EVENTS, namespace="two").items] == ["e2"]
    assert last(server).path == "/api/v1/namespaces/two/events"


def test_patch_is_sent_as_a_merge_patch(kube, server):
    server.kube.create(NODES, {"metadata": {"name": "node-a", "labels": {"a": "1", "b": "2"}}})
    patched = kube.patch(NODES, "node-a", {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert patched["metadata"]["labels"] == {"b": "2", "c": "3"}
    sent = last(server)
    assert (sent.method, sent.path) == ("PATCH", "/api/v1/nodes/node-a")
    assert sent.content_type == "application/merge-patch+json"
    assert sent.body == {"metadata": {"labels": {"a": None, "c": "3"}}}

    server.kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 3}})
    assert last(server).content_type == "application/merge-patch+json"
    kube.create(WIDGETS, {"metadata": {"name": "w", "namespace": "ns"}})
    kube.patch(WIDGETS, "w", {"spec": {"x": 1}}, namespace="ns")
    assert (last(server).path, last(server).content_type) == (
        "/apis/example.com/v1/namespaces/ns/widgets/w",
        "application/merge-patch+json",
    )


def test_status_subresource(kube, server):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    patched = kube.patch(
        PHYSICAL_GPUS, "gpu-a", {"status": {"phase": "Ready"}, "spec": {"index": 9}}, subresource="status"
    )
    sent = last(server)
    assert (sent.path, sent.content_type) == (f"{GPUS_PATH}/gpu-a/status", "application/merge-patch+json")
    assert patched["status"] == {"phase": "Ready"}
    assert patched["spec"] == {"index": 0}
    main = kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": {"phase": "Lost"}, "spec": {"index": 1}})
    assert main["status"] == {"phase": "Ready"}
    assert main["spec"] == {"index": 1}
    with pytest.raises(NotFound):
        kube.patch(EVENTS, "e", {"status": {}}, subresource="status", namespace="default")


def test_resource_version_conflict(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    kube.patch(PHYSICAL_GPUS, "gpu-a", {**stale, "spec": {"index": 1}})
    with pytest.raises(Conflict) as caught:
        kube.patch(PHYSICAL_GPUS, "gpu-a", {**stale, "spec": {"index": 2}})
    assert not isinstance(caught.value, AlreadyExists)
    assert kube.get(PHYSICAL_GPUS, "gpu-a")["spec"]["index"] == 1


def test_delete_with_uid_precondition(kube, server):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    other = str(uuid.uuid4())
    with pytest.raises(Conflict, match="UID"):
        kube.delete(PHYSICAL_GPUS, "gpu-a", uid=other)
    sent = last(server)
    assert (sent.method, sent.path) == ("DELETE", f"{GPUS_PATH}/gpu-a")
    assert sent.body["preconditions"] == {"uid": other}
    kube.delete(PHYSICAL_GPUS, "gpu-a", uid=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "gpu-a")
    with pytest.raises(NotFound):
        kube.delete(PHYSICAL_GPUS, "gpu-a")
    server.kube.create(EVENTS, {"metadata": {"name": "e", "namespace": "default"}})
    kube.delete(EVENTS, "e", namespace="default")
    assert "preconditions" not in last(server).body
    assert server.kube.list(EVENTS).items == []
