# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube.create: server-filled fields, resource versions, names and rejected bodies."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, AlreadyExists, Invalid
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import WIDGETS, gpu, rv, widget

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


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
