# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's audit of shares of one card, against the in-memory API: claims allocated
(by the scheduler, say) but not prepared yet whose shares ask different things of one card get a
Warning Event each, naming the claims, and count in the violations metric."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest

from deckhouse_gpu.cmd.gpu_dra_controller.run import RunningDraController, start_dra_controller
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.ports.kube import EVENTS, NODES, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.services.allocation.dra_controller import DraControllerSettings
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards
from testkit.waiting import wait_for

SETTINGS = DraControllerSettings(
    debounce_seconds=0.01,
    audit_debounce_seconds=0.05,
    audit_interval_seconds=3600,
    watch_timeout_seconds=2,
    backoff_initial_seconds=0.05,
    backoff_max_seconds=0.2,
)
SHARED = "gpu-0000-10-00-0"  # w1's A30, offered as a shared device
REASON = "MixedSharingStrategies"
MPS = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
LONG = {
    "apiVersion": LEGACY_API_VERSION,
    "kind": "GPUConfig",
    "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Long"}},
}
DEFAULT = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "TimeSlicing"}}


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    kube.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1"}})
    for item in render_nodes(
        node_cards("w1", "a30", 1), 35, {"gpu.deckhouse.io/sharing": "true"}, True, True
    ):
        kube.create(RESOURCE_SLICES, item)
    return kube


@pytest.fixture
def running(kube: MemoryKube) -> Iterator[RunningDraController]:
    stop = threading.Event()
    controller = start_dra_controller(kube, stop, leader_elect=False, settings=SETTINGS)
    wait_for(controller.controller.synced)
    yield controller
    stop.set()
    controller.shutdown()


def shared_device(kube: MemoryKube) -> dict[str, Any]:
    devices = [d for s in kube.list(RESOURCE_SLICES).items for d in s["spec"].get("devices") or []]
    return next(d for d in devices if d["name"] == SHARED)


def allocate_share(kube: MemoryKube, name: str, percent: str, parameters: dict[str, Any] | None) -> None:
    """A claim of the class gpu-a30-shared, allocated a share of w1's card as the scheduler writes
    it, with the class's config (if any) in the allocation; never prepared."""
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu-a30-shared", "capacity": {"requests": {"sharePercent": percent}}},
    }
    kube.create(
        RESOURCE_CLAIMS,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"namespace": "ml", "name": name},
            "spec": {"devices": {"requests": [request]}},
        },
    )
    result = {
        "request": "gpu",
        "driver": "gpu.deckhouse.io",
        "pool": "gpus/w1",
        "device": SHARED,
        "shareID": f"share-{name}",
        "consumedCapacity": {"sharePercent": percent, "memory": "0"},
    }
    devices: dict[str, Any] = {"results": [result]}
    if parameters is not None:
        devices["config"] = [
            {"source": "FromClass", "opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters}}
        ]
    kube.patch(
        RESOURCE_CLAIMS,
        name,
        {"status": {"allocation": {"devices": devices}}},
        subresource="status",
        namespace="ml",
    )


def events(kube: MemoryKube) -> list[dict[str, Any]]:
    return [e for e in kube.list(EVENTS).items if e.get("reason") == REASON]


def violations(running: RunningDraController) -> str:
    return next(
        line
        for line in generate_latest(running.metrics.registry).decode().splitlines()
        if line.startswith(f'd8_gpu_allocation_invariant_violations{{kind="{REASON}"}}')
    )


def allocated_in_cache(running: RunningDraController) -> int:
    claims = running.controller.claims.items()
    return sum(1 for c in claims if (c.get("status") or {}).get("allocation"))


def test_the_slices_offer_the_card_as_a_shared_device(kube: MemoryKube) -> None:
    assert shared_device(kube)["allowMultipleAllocations"] is True


@pytest.mark.parametrize(
    ("first", "second", "asks"),
    [
        (None, MPS, "MPS: ml/b; TimeSlicing (interval Default): ml/a"),
        (DEFAULT, LONG, "TimeSlicing (interval Default): ml/a; TimeSlicing (interval Long): ml/b"),
    ],
)
def test_shares_asking_different_things_of_a_card_get_an_event_each_and_a_metric(
    kube: MemoryKube,
    running: RunningDraController,
    first: dict[str, Any] | None,
    second: dict[str, Any],
    asks: str,
) -> None:
    allocate_share(kube, "a", "50", first)
    allocate_share(kube, "b", "25", second)
    wait_for(lambda: len(events(kube)) == 2, what="an event on each claim")
    found = events(kube)
    assert sorted(e["involvedObject"]["name"] for e in found) == ["a", "b"]
    for event in found:
        assert event["type"] == "Warning"
        assert f"shares of {SHARED} ask for different sharing of the card ({asks}): " in event["message"]
    assert violations(running).endswith(" 1.0")


def test_shares_that_fit_one_card_are_no_violation(kube: MemoryKube, running: RunningDraController) -> None:
    allocate_share(kube, "a", "50", None)  # no sharing config: time-slicing at the default interval
    allocate_share(kube, "b", "25", DEFAULT)
    wait_for(lambda: allocated_in_cache(running) == 2, what="both claims allocated in the cache")
    running.controller.run_audit()
    assert running.controller.report.violations == []
    assert events(kube) == []
    assert violations(running).endswith(" 0.0")
