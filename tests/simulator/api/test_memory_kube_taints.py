# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The in-memory API server treats device taints as the real one does (KUBERNETES-FACTS.md F1.7): with
DRADeviceTaints on it fills a missing ``timeAdded`` on every write (the v1 defaulting, in seconds)
and keeps a given one; with the gate off it drops ``devices[].taints`` silently."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES
from deckhouse_gpu.simulator.api.feature_gates import gates_off
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube

TAINT = {"key": "gpu.deckhouse.io/unhealthy", "value": "GPULost", "effect": "NoExecute"}


def kube(minute: list[int]) -> MemoryKube:
    return MemoryKube(clock=lambda: datetime(2026, 11, 21, 12, minute[0], 30, 123456, tzinfo=UTC))


def resource_slice(*taints: dict[str, str]) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "gpu-0000-17-00-0"}
    if taints:
        device["taints"] = [dict(t) for t in taints]
    return {
        "metadata": {"name": "s"},
        "spec": {"driver": "gpu.deckhouse.io", "nodeName": "w1", "devices": [device, {"name": "other"}]},
    }


def taints(api: MemoryKube) -> list[dict[str, str]]:
    return list(api.get(RESOURCE_SLICES, "s")["spec"]["devices"][0].get("taints", []))


def test_a_missing_time_is_set_at_each_write_and_a_given_one_kept():
    minute = [0]
    api = kube(minute)
    api.create(RESOURCE_SLICES, resource_slice(TAINT))
    assert taints(api) == [{**TAINT, "timeAdded": "2026-11-21T12:00:30Z"}]  # in seconds
    assert "taints" not in api.get(RESOURCE_SLICES, "s")["spec"]["devices"][1]
    minute[0] = 5
    # Sending the stored time back changes nothing: no write, the same resourceVersion.
    version = api.get(RESOURCE_SLICES, "s")["metadata"]["resourceVersion"]
    same = api.patch(
        RESOURCE_SLICES, "s", {"spec": resource_slice({**TAINT, "timeAdded": "2026-11-21T12:00:30Z"})["spec"]}
    )
    assert same["metadata"]["resourceVersion"] == version
    # Sending the taint without its time makes it new, as the real server does.
    api.patch(RESOURCE_SLICES, "s", {"spec": resource_slice(TAINT)["spec"]})
    assert taints(api) == [{**TAINT, "timeAdded": "2026-11-21T12:05:30Z"}]
    api.patch(RESOURCE_SLICES, "s", {"spec": resource_slice()["spec"]})
    assert taints(api) == []


def test_the_gate_off_drops_taints_and_nothing_else():
    api = kube([0])
    api.drop_fields = gates_off(taints=True)
    sent = resource_slice(TAINT)
    stored = api.create(RESOURCE_SLICES, sent)
    assert "taints" not in stored["spec"]["devices"][0]
    assert [d["name"] for d in stored["spec"]["devices"]] == ["gpu-0000-17-00-0", "other"]
    assert sent["spec"]["devices"][0]["taints"] == [TAINT]  # the caller's object is left alone


def test_other_kinds_are_not_touched():
    api = kube([0])
    node = api.create(NODES, {"metadata": {"name": "w1"}, "spec": {"devices": [{"taints": [dict(TAINT)]}]}})
    assert node["spec"]["devices"][0]["taints"] == [TAINT]
