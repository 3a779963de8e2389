# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MemoryKube as a KubeAPI, and the aids it offers tests: injected failures, call counts."""

from __future__ import annotations

import pytest

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, NotFound, Unavailable, WatchExpired
from tests.support import memory_kube_objects
from tests.support.memory_kube_objects import gpu

# The shared fixture, bound here so that pytest finds it for this module's tests.
kube = memory_kube_objects.kube


def test_is_a_kube_api(kube):
    api: KubeAPI = kube
    assert api is kube


# --- test helpers --------------------------------------------------------------------------------


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
