# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube.delete: the UID precondition and garbage collection of dependents."""

from __future__ import annotations

import uuid

import pytest

from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Conflict, Invalid, NotFound
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import WIDGETS, gpu, owned_by, widget

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


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
