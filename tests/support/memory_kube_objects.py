# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Objects and the fixture MemoryKube's tests share: a fixed clock and small GPU and widget bodies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deckhouse_gpu.ports.kube import Resource
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube

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
