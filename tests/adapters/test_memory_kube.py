from __future__ import annotations

import queue
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    AlreadyExists,
    Conflict,
    Invalid,
    KubeAPI,
    NotFound,
    Resource,
    Unavailable,
    WatchEvent,
    WatchExpired,
)

# Namespaced, without a status subresource: status is an ordinary field there.
WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
NOW = datetime(2025, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)


@pytest.fixture
def kube() -> MemoryKube:
    return MemoryKube(clock=lambda: NOW)


def gpu(name, labels=None, **extra):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"index": 0}, **extra}


def widget(name, namespace="ns", **extra):
    return {"metadata": {"name": name, "namespace": namespace}, **extra}


def owned_by(obj, name, namespace=None):
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"]}
    meta = {"name": name, "ownerReferences": [{**ref, "uid": obj["metadata"]["uid"]}]}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


def rv(obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_is_a_kube_api(kube):
    api: KubeAPI = kube
    assert api is kube


# --- create -------------------------------------------------------------------------------


def test_create_fills_server_fields(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    meta = created["metadata"]
    assert created["apiVersion"] == "gpu.deckhouse.io/v1alpha1"
    assert created["kind"] == "PhysicalGPU"
    assert uuid.UUID(meta["uid"]).version == 4
    assert meta["creationTimestamp"] == "2025-01-02T03:04:05Z"
    assert meta["resourceVersion"] == "1"
    assert meta["generation"] == 1
    assert kube.get(PHYSICAL_GPUS, "gpu-a") == created


def test_creation_timestamp_is_utc_from_the_clock():
    local = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC).astimezone(UTC) + timedelta(0)
    kube = MemoryKube(clock=lambda: local.astimezone(UTC))
    assert kube.create(NODES, {"metadata": {"name": "n"}})["metadata"]["creationTimestamp"] == (
        "2025-06-01T12:00:00Z"
    )
    default = MemoryKube().create(NODES, {"metadata": {"name": "n"}})["metadata"]["creationTimestamp"]
    assert default.endswith("Z")
    assert abs(datetime.fromisoformat(default) - datetime.now(UTC)) < timedelta(minutes=1)


def test_resource_version_is_global_and_increasing(kube):
    first = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    second = kube.create(NODES, {"metadata": {"name": "node-a"}})
    third = kube.create(EVENTS, widget("ev", namespace="default"))
    assert [rv(first), rv(second), rv(third)] == [1, 2, 3]
    assert kube.resource_version == "3"
    assert kube.list(NODES).resource_version == "3"


def test_create_with_generate_name(kube):
    first = kube.create(WIDGETS, {"metadata": {"generateName": "w-", "namespace": "ns"}})
    second = kube.create(WIDGETS, {"metadata": {"generateName": "w-", "namespace": "ns"}})
    for obj in (first, second):
        assert obj["metadata"]["name"].startswith("w-")
        assert len(obj["metadata"]["name"]) == len("w-") + 5
    assert first["metadata"]["name"] != second["metadata"]["name"]
    with pytest.raises(Invalid, match="generateName"):
        kube.create(WIDGETS, {"metadata": {"namespace": "ns"}})


def test_create_duplicate_is_already_exists(kube):
    kube.create(WIDGETS, widget("w"))
    with pytest.raises(AlreadyExists):
        kube.create(WIDGETS, widget("w"))
    # The same name in another namespace is another object.
    kube.create(WIDGETS, widget("w", namespace="other"))


def test_create_drops_status_only_with_a_status_subresource(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a", status={"x": 1}))
    assert "status" not in created
    assert "status" not in kube.get(PHYSICAL_GPUS, "gpu-a")
    assert kube.create(WIDGETS, widget("w", status={"x": 1}))["status"] == {"x": 1}


def test_create_does_not_keep_a_reference_to_the_callers_object(kube):
    body = gpu("gpu-a")
    kube.create(PHYSICAL_GPUS, body)
    body["spec"]["index"] = 9
    assert "uid" not in body["metadata"]
    assert kube.get(PHYSICAL_GPUS, "gpu-a")["spec"]["index"] == 0


def test_create_rejects_bad_objects(kube):
    with pytest.raises(Invalid, match="namespace is required"):
        kube.create(WIDGETS, {"metadata": {"name": "w"}})
    with pytest.raises(Invalid, match="kind"):
        kube.create(PHYSICAL_GPUS, gpu("gpu-a", kind="Node"))
    with pytest.raises(Invalid, match="apiVersion"):
        kube.create(PHYSICAL_GPUS, gpu("gpu-a", apiVersion="v1"))
    with pytest.raises(Invalid, match="resourceVersion"):
        kube.create(NODES, {"metadata": {"name": "n", "resourceVersion": "5"}})
    assert kube.list(PHYSICAL_GPUS).items == []


def test_cluster_scoped_create_drops_the_namespace(kube):
    created = kube.create(NODES, {"metadata": {"name": "n", "namespace": "ns"}})
    assert "namespace" not in created["metadata"]
    assert kube.get(NODES, "n")["metadata"]["name"] == "n"


# --- get ----------------------------------------------------------------------------------


def test_get_errors_and_copies(kube):
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "missing")
    kube.create(WIDGETS, widget("w"))
    with pytest.raises(Invalid, match="namespace is required"):
        kube.get(WIDGETS, "w")
    with pytest.raises(NotFound):
        kube.get(WIDGETS, "w", namespace="other")
    with pytest.raises(Invalid, match="cluster-scoped"):
        kube.get(NODES, "n", namespace="ns")
    got = kube.get(WIDGETS, "w", namespace="ns")
    got["metadata"]["name"] = "changed"
    assert kube.get(WIDGETS, "w", namespace="ns")["metadata"]["name"] == "w"


# --- patch --------------------------------------------------------------------------------


def test_patch_is_a_json_merge_patch(kube):
    kube.create(WIDGETS, widget("w", spec={"a": 1, "b": 2, "list": [1, 2]}))
    patched = kube.patch(WIDGETS, "w", {"spec": {"a": None, "c": 3, "list": [3]}}, namespace="ns")
    assert patched["spec"] == {"b": 2, "c": 3, "list": [3]}
    assert kube.get(WIDGETS, "w", namespace="ns") == patched


def test_patch_bumps_resource_version_and_generation_on_spec_change(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    patched = kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    assert rv(patched) > rv(created)
    assert patched["metadata"]["generation"] == 2
    labelled = kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["labels"] == {"a": "b"}
    assert rv(labelled) > rv(patched)
    assert labelled["metadata"]["generation"] == 2  # metadata is not the spec
    status = kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": {"ok": True}}, subresource="status")
    assert status["metadata"]["generation"] == 2


def test_status_field_does_not_count_for_generation_without_subresource(kube):
    kube.create(WIDGETS, widget("w"))
    patched = kube.patch(WIDGETS, "w", {"status": {"phase": "Ready"}}, namespace="ns")
    assert patched["status"] == {"phase": "Ready"}
    assert patched["metadata"]["generation"] == 1


def test_noop_patch_keeps_the_resource_version_and_emits_nothing(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a", labels={"a": "b"}))
    same = kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 0}, "metadata": {"labels": {"a": "b"}}})
    assert same == created
    assert kube.resource_version == created["metadata"]["resourceVersion"]
    assert list(kube.watch(PHYSICAL_GPUS, kube.resource_version, timeout_seconds=0)) == []


def test_main_patch_ignores_status_of_a_resource_with_status_subresource(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": {"phase": "Old"}}, subresource="status")
    patched = kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 2}, "status": {"phase": "New"}})
    assert patched["status"] == {"phase": "Old"}
    assert patched["spec"] == {"index": 2}
    removing = kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": None})
    assert removing["status"] == {"phase": "Old"}


def test_status_subresource_changes_only_status(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a", labels={"a": "b"}))
    patched = kube.patch(
        PHYSICAL_GPUS,
        "gpu-a",
        {"status": {"phase": "Ready"}, "spec": {"index": 7}, "metadata": {"labels": {"a": "c"}}},
        subresource="status",
    )
    assert patched["status"] == {"phase": "Ready"}
    assert patched["spec"] == {"index": 0}
    assert patched["metadata"]["labels"] == {"a": "b"}
    assert rv(patched) > rv(created)
    cleared = kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": None}, subresource="status")
    assert "status" not in cleared


def test_status_subresource_honours_the_resource_version_precondition(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    with pytest.raises(Conflict):
        kube.patch(
            PHYSICAL_GPUS,
            "gpu-a",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "status": {"x": 1}},
            subresource="status",
        )
    assert "status" not in kube.get(PHYSICAL_GPUS, "gpu-a")


def test_unknown_subresource_is_not_found(kube):
    kube.create(WIDGETS, widget("w"))
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    with pytest.raises(NotFound):
        kube.patch(WIDGETS, "w", {"status": {"x": 1}}, subresource="status", namespace="ns")
    with pytest.raises(NotFound):
        kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {}}, subresource="scale")


def test_resource_version_in_patch_is_a_precondition(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    current = created["metadata"]["resourceVersion"]
    patched = kube.patch(
        PHYSICAL_GPUS, "gpu-a", {"metadata": {"resourceVersion": current}, "spec": {"index": 1}}
    )
    assert patched["spec"]["index"] == 1
    with pytest.raises(Conflict):
        kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"resourceVersion": current}, "spec": {"index": 2}})
    assert kube.get(PHYSICAL_GPUS, "gpu-a")["spec"]["index"] == 1
    with pytest.raises(Conflict):
        kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"uid": str(uuid.uuid4())}, "spec": {"index": 3}})


def test_patch_keeps_server_owned_fields(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    patched = kube.patch(
        PHYSICAL_GPUS,
        "gpu-a",
        {
            "kind": "Node",
            "metadata": {"uid": None, "creationTimestamp": "2000-01-01T00:00:00Z", "generation": 9},
            "spec": {"index": 1},
        },
    )
    for field in ("uid", "creationTimestamp"):
        assert patched["metadata"][field] == created["metadata"][field]
    assert patched["metadata"]["generation"] == 2
    assert patched["kind"] == "PhysicalGPU"
    with pytest.raises(Invalid, match="name"):
        kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"name": "gpu-b"}})


def test_patch_missing_is_not_found(kube):
    with pytest.raises(NotFound):
        kube.patch(PHYSICAL_GPUS, "missing", {"spec": {}})
    with pytest.raises(Invalid, match="namespace"):
        kube.patch(WIDGETS, "w", {"spec": {}})


# --- delete and garbage collection ----------------------------------------------------


def test_delete_and_uid_precondition(kube):
    created = kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    with pytest.raises(Conflict, match="UID"):
        kube.delete(PHYSICAL_GPUS, "gpu-a", uid=str(uuid.uuid4()))
    assert kube.get(PHYSICAL_GPUS, "gpu-a") == created
    kube.delete(PHYSICAL_GPUS, "gpu-a", uid=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "gpu-a")
    with pytest.raises(NotFound):
        kube.delete(PHYSICAL_GPUS, "gpu-a")
    kube.create(WIDGETS, widget("w"))
    with pytest.raises(Invalid, match="namespace"):
        kube.delete(WIDGETS, "w")
    kube.delete(WIDGETS, "w", namespace="ns")
    assert kube.list(WIDGETS).items == []


def test_deleting_an_owner_deletes_its_dependents_recursively(kube):
    node = kube.create(NODES, {"metadata": {"name": "node-a"}})
    child = kube.create(PHYSICAL_GPUS, owned_by(node, "gpu-a"))
    grandchild = kube.create(WIDGETS, owned_by(child, "w", namespace="ns"))
    kube.create(PHYSICAL_GPUS, gpu("unrelated"))
    start = kube.resource_version
    kube.delete(NODES, "node-a")
    assert [o["metadata"]["name"] for o in kube.list(PHYSICAL_GPUS).items] == ["unrelated"]
    assert kube.list(WIDGETS).items == []
    deleted = [e for e in kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0)]
    assert [(e.type, e.object["metadata"]["uid"]) for e in deleted] == [("DELETED", child["metadata"]["uid"])]
    widgets = list(kube.watch(WIDGETS, start, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["uid"]) for e in widgets] == [
        ("DELETED", grandchild["metadata"]["uid"])
    ]


def test_a_dependent_with_another_live_owner_only_loses_the_reference(kube):
    first = kube.create(NODES, {"metadata": {"name": "node-a"}})
    second = kube.create(NODES, {"metadata": {"name": "node-b"}})
    shared = owned_by(first, "gpu-a")
    shared["metadata"]["ownerReferences"] += owned_by(second, "x")["metadata"]["ownerReferences"]
    kube.create(PHYSICAL_GPUS, shared)
    kube.delete(NODES, "node-a")
    refs = kube.get(PHYSICAL_GPUS, "gpu-a")["metadata"]["ownerReferences"]
    assert [r["uid"] for r in refs] == [second["metadata"]["uid"]]
    kube.delete(NODES, "node-b")
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "gpu-a")


# --- list ---------------------------------------------------------------------------------


def test_list_filters_by_label_selector_and_namespace(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-b", labels={"vendor": "nvidia", "node": "a"}))
    kube.create(PHYSICAL_GPUS, gpu("gpu-a", labels={"vendor": "amd", "node": "a"}))
    kube.create(PHYSICAL_GPUS, gpu("gpu-c", labels={"vendor": "nvidia", "node": "b"}))

    def names(selector):
        return [o["metadata"]["name"] for o in kube.list(PHYSICAL_GPUS, label_selector=selector).items]

    assert names(None) == ["gpu-a", "gpu-b", "gpu-c"]
    assert names("vendor=nvidia") == ["gpu-b", "gpu-c"]
    assert names("vendor=nvidia,node=a") == ["gpu-b"]
    assert names("vendor notin (nvidia)") == ["gpu-a"]
    assert names("!vendor") == []
    with pytest.raises(Invalid, match="invalid label selector"):
        kube.list(PHYSICAL_GPUS, label_selector="vendor in nvidia")

    kube.create(WIDGETS, widget("w1", namespace="one"))
    kube.create(WIDGETS, widget("w2", namespace="two"))
    assert [o["metadata"]["name"] for o in kube.list(WIDGETS).items] == ["w1", "w2"]
    assert [o["metadata"]["name"] for o in kube.list(WIDGETS, namespace="two").items] == ["w2"]
    with pytest.raises(Invalid, match="cluster-scoped"):
        kube.list(PHYSICAL_GPUS, namespace="two")


def test_list_returns_copies_and_the_current_resource_version(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.create(NODES, {"metadata": {"name": "n"}})
    listed = kube.list(PHYSICAL_GPUS)
    assert listed.resource_version == "2"
    listed.items[0]["spec"]["index"] = 5
    assert kube.get(PHYSICAL_GPUS, "gpu-a")["spec"]["index"] == 0


# --- watch --------------------------------------------------------------------------------


def test_watch_replays_changes_strictly_after_the_resource_version(kube):
    kube.create(PHYSICAL_GPUS, gpu("before"))
    start = kube.list(PHYSICAL_GPUS).resource_version
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.create(NODES, {"metadata": {"name": "node-a"}})  # another resource: not in this watch
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"status": {"ok": True}}, subresource="status")
    kube.delete(PHYSICAL_GPUS, "gpu-a")
    events = list(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("DELETED", "gpu-a"),
    ]
    versions = [rv(e.object) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(start)
    deleted = events[-1].object
    assert deleted["status"] == {"ok": True}  # the last state
    assert deleted["spec"] == {"index": 1}
    assert deleted["metadata"]["resourceVersion"] == kube.resource_version
    # Resuming from the middle gives only what came after it.
    resumed = list(kube.watch(PHYSICAL_GPUS, str(versions[1]), timeout_seconds=0))
    assert [e.type for e in resumed] == ["MODIFIED", "DELETED"]


def test_watch_from_zero_starts_with_the_current_objects(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.create(PHYSICAL_GPUS, gpu("gpu-b"))
    kube.delete(PHYSICAL_GPUS, "gpu-b")
    events = list(kube.watch(PHYSICAL_GPUS, "0", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "gpu-a")]


def test_watch_filters_by_label_selector_including_transitions(kube):
    kube.create(NODES, {"metadata": {"name": "node-a"}})
    start = kube.resource_version  # not "0", which would mean "from the current state"
    kube.create(PHYSICAL_GPUS, gpu("gpu-a", labels={"vendor": "nvidia"}))
    kube.create(PHYSICAL_GPUS, gpu("gpu-b", labels={"vendor": "amd"}))
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    kube.patch(PHYSICAL_GPUS, "gpu-b", {"metadata": {"labels": {"vendor": "nvidia"}}})  # enters
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"metadata": {"labels": {"vendor": "amd"}}})  # leaves
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 2}})  # outside: unseen
    kube.delete(PHYSICAL_GPUS, "gpu-a")  # outside: unseen
    kube.delete(PHYSICAL_GPUS, "gpu-b")
    events = list(kube.watch(PHYSICAL_GPUS, start, label_selector="vendor=nvidia", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("ADDED", "gpu-b"),
        ("DELETED", "gpu-a"),
        ("DELETED", "gpu-b"),
    ]
    with pytest.raises(Invalid):
        kube.watch(PHYSICAL_GPUS, start, label_selector="vendor in")


def test_watch_filters_by_namespace(kube):
    kube.create(WIDGETS, widget("w0", namespace="two"))
    start = kube.resource_version
    kube.create(WIDGETS, widget("w1", namespace="one"))
    kube.create(WIDGETS, widget("w2", namespace="two"))
    events = list(kube.watch(WIDGETS, start, namespace="two", timeout_seconds=0))
    assert [e.object["metadata"]["name"] for e in events] == ["w2"]
    assert len(list(kube.watch(WIDGETS, start, timeout_seconds=0))) == 2
    current = list(kube.watch(WIDGETS, "0", namespace="two", timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in current] == [("ADDED", "w0"), ("ADDED", "w2")]


def test_watch_blocks_for_live_events_until_the_timeout(kube):
    start = kube.resource_version
    received: queue.Queue[WatchEvent | None] = queue.Queue()

    def consume():
        for event in kube.watch(PHYSICAL_GPUS, start, timeout_seconds=1):
            received.put(event)
        received.put(None)

    began = time.monotonic()
    consumer = threading.Thread(target=consume)
    consumer.start()
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    event = received.get(timeout=2)
    assert event is not None
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "gpu-a")
    kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 4}})
    event = received.get(timeout=2)
    assert event is not None
    assert event.type == "MODIFIED"
    assert received.get(timeout=3) is None  # the iterator ends at the timeout
    consumer.join(timeout=1)
    assert 0.9 <= time.monotonic() - began < 2.5


def test_watch_from_a_compacted_resource_version_expires():
    kube = MemoryKube(history=3)
    for index in range(5):
        kube.create(NODES, {"metadata": {"name": f"n{index}"}})
    # Revisions 1 and 2 fell out of the history: 2 is the last one still resumable.
    assert [e.object["metadata"]["name"] for e in kube.watch(NODES, "2", timeout_seconds=0)] == [
        "n2",
        "n3",
        "n4",
    ]
    # Like the real server's ERROR event, expiry shows at the first next(), not at the call.
    expired = kube.watch(NODES, "1", timeout_seconds=0)
    with pytest.raises(WatchExpired, match="too old"):
        next(expired)
    with pytest.raises(Invalid):
        kube.watch(NODES, "abc", timeout_seconds=0)


def test_a_watcher_that_falls_behind_the_history_expires():
    kube = MemoryKube(history=2)
    events = kube.watch(NODES, kube.resource_version, timeout_seconds=0)
    for index in range(4):
        kube.create(NODES, {"metadata": {"name": f"n{index}"}})
    with pytest.raises(WatchExpired):
        next(events)


def test_watch_events_are_copies(kube):
    start = kube.resource_version
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    first = next(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    first.object["spec"]["index"] = 42
    again = next(kube.watch(PHYSICAL_GPUS, start, timeout_seconds=0))
    assert again.object["spec"]["index"] == 0


# --- test helpers ---------------------------------------------------------------------


def test_fail_next_injects_failures_then_recovers(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.fail_next("patch", Unavailable("etcd is down"), times=2)
    for _ in range(2):
        with pytest.raises(Unavailable, match="etcd is down"):
            kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    assert kube.get(PHYSICAL_GPUS, "gpu-a")["spec"]["index"] == 0
    assert kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})["spec"]["index"] == 1
    kube.fail_next("watch", WatchExpired("gone"))
    with pytest.raises(WatchExpired):
        kube.watch(PHYSICAL_GPUS, "1")
    with pytest.raises(ValueError, match="unknown verb"):
        kube.fail_next("update", Unavailable("x"))


def test_calls_are_counted_per_verb(kube):
    kube.create(PHYSICAL_GPUS, gpu("gpu-a"))
    kube.get(PHYSICAL_GPUS, "gpu-a")
    kube.list(PHYSICAL_GPUS)
    kube.list(PHYSICAL_GPUS)
    with pytest.raises(NotFound):
        kube.get(PHYSICAL_GPUS, "missing")
    assert kube.calls == {"create": 1, "get": 2, "list": 2}
    assert kube.writes == 1
    kube.calls.clear()
    kube.get(PHYSICAL_GPUS, "gpu-a")
    assert kube.writes == 0


def test_concurrent_writers_get_distinct_resource_versions(kube):
    kube.create(PHYSICAL_GPUS, gpu("counter", spec={"count": 0}))

    def increment():
        for _ in range(50):
            while True:
                current = kube.get(PHYSICAL_GPUS, "counter")
                meta = {"resourceVersion": current["metadata"]["resourceVersion"]}
                try:
                    kube.patch(
                        PHYSICAL_GPUS,
                        "counter",
                        {"metadata": meta, "spec": {"count": current["spec"]["count"] + 1}},
                    )
                    break
                except Conflict:
                    continue

    threads = [threading.Thread(target=increment) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert kube.get(PHYSICAL_GPUS, "counter")["spec"]["count"] == 200
    modified = [e for e in kube.watch(PHYSICAL_GPUS, "1", timeout_seconds=0) if e.type == "MODIFIED"]
    assert len(modified) == 200
