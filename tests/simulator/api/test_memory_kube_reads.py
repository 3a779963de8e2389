# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube.get and MemoryKube.list: errors, copies, selectors and namespaces."""

from __future__ import annotations

import pytest

from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Invalid, NotFound
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import WIDGETS, gpu, widget

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


# --- get -----------------------------------------------------------------------------------------


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


# --- list ----------------------------------------------------------------------------------------


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
