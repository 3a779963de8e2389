# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube.patch: merge patches, generations, the status subresource and preconditions."""

from __future__ import annotations

import threading
import uuid

import pytest

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, Conflict, Invalid, NotFound
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import WIDGETS, gpu, rv, widget

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


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


# --- concurrent writers --------------------------------------------------------------------------


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
