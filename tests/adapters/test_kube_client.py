from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes.config import ConfigException

from deckhouse_gpu.adapters.kube_client import ClientKube, load_kube
from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    KubeAPI,
    KubeError,
    NotFound,
    Resource,
    Unavailable,
    WatchExpired,
)
from tests.support import kubeconfig as support_kubeconfig
from tests.support.fake_apiserver import FakeApiServer, RecordedRequest
from tests.support.waiting import free_port

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
RESOURCES = (NODES, EVENTS, PHYSICAL_GPUS, WIDGETS)
GPUS_PATH = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"
TOKEN = "secret-token"


def write_kubeconfig(directory, server_url: str) -> str:
    return support_kubeconfig.write_kubeconfig(directory, server_url, TOKEN)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(resources=RESOURCES) as running:
        yield running


@pytest.fixture
def kube(server, tmp_path) -> Iterator[ClientKube]:
    client = load_kube(write_kubeconfig(tmp_path, server.url), connect_timeout=1, read_timeout=5)
    yield client
    client.close()


def gpu(name, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"index": 0}}


def last(server: FakeApiServer) -> RecordedRequest:
    return server.requests[-1]


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
    assert sent.authorization == f"Bearer {TOKEN}"
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
    assert last(server).query == {"labelSelector": "vendor=nvidia,node!=b"}
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


def test_watch_streams_live_events(kube, server):
    server.kube.create(PHYSICAL_GPUS, gpu("old", {"vendor": "nvidia"}))
    start = kube.list(PHYSICAL_GPUS).resource_version
    events = kube.watch(PHYSICAL_GPUS, start, label_selector="vendor=nvidia", timeout_seconds=5)
    sent = last(server)
    assert sent.query == {
        "watch": "true",
        "resourceVersion": start,
        "timeoutSeconds": "5",
        "allowWatchBookmarks": "false",
        "labelSelector": "vendor=nvidia",
    }
    began = time.monotonic()
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-b", {"vendor": "amd"}))  # filtered out
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-a", {"vendor": "nvidia"}))
    server.kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    server.kube.delete(PHYSICAL_GPUS, "gpu-a")
    received = [next(events) for _ in range(3)]
    assert time.monotonic() - began < 2  # delivered as they happened, not at the timeout
    assert [(e.type, e.object["metadata"]["name"]) for e in received] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("DELETED", "gpu-a"),
    ]
    assert received[2].object["spec"] == {"index": 1}


def test_watch_ends_at_the_servers_timeout(kube, server):
    start = server.kube.resource_version
    server.kube.create(NODES, {"metadata": {"name": "node-a"}})
    events = list(kube.watch(NODES, start, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "node-a")]


def test_watch_over_a_connection_close_stream(tmp_path):
    with FakeApiServer(chunked=False) as server:
        kube = load_kube(write_kubeconfig(tmp_path, server.url), read_timeout=5)
        events = kube.watch(NODES, server.kube.resource_version, timeout_seconds=5)
        began = time.monotonic()
        server.kube.create(NODES, {"metadata": {"name": "node-a"}})
        event = next(events)
        assert time.monotonic() - began < 2
        assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "node-a")
        kube.close()


def test_watch_expiry(tmp_path):
    with FakeApiServer(MemoryKube(history=2)) as server:
        kube = load_kube(write_kubeconfig(tmp_path, server.url), read_timeout=5)
        for index in range(4):
            server.kube.create(NODES, {"metadata": {"name": f"n{index}"}})
        with pytest.raises(WatchExpired, match="too old resource version"):
            list(kube.watch(NODES, "1", timeout_seconds=5))
        assert [e.object["metadata"]["name"] for e in kube.watch(NODES, "2", timeout_seconds=0)] == [
            "n2",
            "n3",
        ]
        kube.close()


def test_watch_rejects_a_bad_selector_at_once(kube):
    with pytest.raises(Invalid):
        kube.watch(NODES, "1", label_selector="a in", timeout_seconds=5)


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
    kube = load_kube(write_kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}"), connect_timeout=1)
    began = time.monotonic()
    with pytest.raises(Unavailable):
        kube.get(NODES, "node-a")
    with pytest.raises(Unavailable):
        kube.patch(NODES, "node-a", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(Unavailable):
        kube.watch(NODES, "1", timeout_seconds=5)
    assert time.monotonic() - began < 2
    kube.close()


def test_a_server_that_never_answers_times_out_as_unavailable(tmp_path):
    with socket.socket() as silent:  # accepts connections (backlog) but never responds
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        kube = load_kube(write_kubeconfig(tmp_path, url), connect_timeout=1, read_timeout=0.2)
        began = time.monotonic()
        with pytest.raises(Unavailable):
            kube.get(NODES, "node-a")
        # A GET is retried once (for a stale pooled connection), and no more.
        assert time.monotonic() - began < 1
        began = time.monotonic()
        with pytest.raises(Unavailable):
            kube.create(NODES, {"metadata": {"name": "node-a"}})
        assert time.monotonic() - began < 1
        kube.close()


def test_without_a_kubeconfig_it_uses_the_in_cluster_config(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ConfigException, match="Service host/port is not set"):
        load_kube(None)
