# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Claims allocated and reserved for a Pod whose devices gpu-handler has not reported prepared
(domain/allocation/not_prepared.py), and the gauges gpu-dra-controller's leader exports of them."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.adapters.metrics.dra_metrics import DraMetrics
from deckhouse_gpu.domain.allocation.not_prepared import NotPrepared, not_prepared
from tests.conftest import FixedClock

DRIVER = "gpu.deckhouse.io"


def claim(
    uid: str, node: str = "w1", pods: int = 1, prepared: tuple[str, ...] = (), other: bool = False
) -> dict[str, Any]:
    results = [{"request": "gpu", "driver": DRIVER, "pool": f"gpus/{node}", "device": d} for d in ("a", "b")]
    if other:
        results = [{**r, "driver": "gpu.nvidia.com"} for r in results]
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}, "nodeSelector": selector}}
    status["reservedFor"] = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(pods)]
    status["devices"] = [{"driver": DRIVER, "pool": f"gpus/{node}", "device": d} for d in prepared]
    return {"metadata": {"uid": uid, "name": uid, "namespace": "ml"}, "status": status}


def test_a_claim_waits_until_every_device_of_the_driver_is_reported():
    claims = [
        claim("none"),
        claim("half", prepared=("a",)),
        claim("done", node="w2", prepared=("a", "b")),
        claim("no-pod", pods=0),  # nobody waits for it: the kubelet prepares for a Pod it runs
        claim("foreign", other=True),  # another driver's devices
        {"metadata": {"uid": "unallocated"}, "status": {}},
    ]
    assert not_prepared(claims) == [NotPrepared("none", "w1"), NotPrepared("half", "w1")]


def _samples(metrics: DraMetrics, name: str) -> dict[str, float]:
    return {
        sample.labels["node"]: sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def test_the_leader_exports_how_many_wait_and_for_how_long():
    clock = FixedClock()
    claims = [claim("old"), claim("w2", node="w2")]
    metrics = DraMetrics(lambda: claims, lambda: [], lambda: True, clock)
    count, age = (
        "d8_gpu_allocated_claims_not_prepared",
        "d8_gpu_allocated_claims_not_prepared_max_age_seconds",
    )
    assert _samples(metrics, age) == {"w1": 0.0, "w2": 0.0}
    clock.ticks = 300.0
    claims.append(claim("new"))
    assert _samples(metrics, count) == {"w1": 2.0, "w2": 1.0}
    assert _samples(metrics, age) == {"w1": 300.0, "w2": 300.0}  # the oldest of w1's two
    claims[:] = [claim("new"), claim("w2", node="w2", prepared=("a", "b"))]
    clock.ticks = 400.0
    assert _samples(metrics, age) == {"w1": 100.0}  # w2's claim is prepared: no series left
    claims[:] = [claim("old")]  # seen again after it was prepared: it waits afresh
    assert _samples(metrics, age) == {"w1": 0.0}


def test_a_replica_that_does_not_lead_exports_none():
    metrics = DraMetrics(lambda: None, lambda: None, lambda: False, FixedClock())
    assert _samples(metrics, "d8_gpu_allocated_claims_not_prepared") == {}
