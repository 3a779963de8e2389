# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's loop against the in-memory API: allocation of the claims the scheduler
never allocates, optimistic writes, the audit and the metrics."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest

from deckhouse_gpu.cmd.gpu_dra_controller.run import RunningDraController, start_dra_controller
from deckhouse_gpu.domain.allocation.node_bound_claims import ALLOCATE_ON_NODE, DELETE_PROTECTION
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS
from deckhouse_gpu.ports.kube import EVENTS, NODES, RESOURCE_CLAIMS, RESOURCE_SLICES, Conflict
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
EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
CLASSES = [c for c in yaml.safe_load_all((EXAMPLES / "deviceclasses.yaml").read_text()) if c]


def claim(name: str, device_class: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "ml", "name": name}
    if annotations:
        meta["annotations"] = annotations
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [request]}},
    }


def pod(name: str, claim_name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "ml", "name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    for node in ("w1", "w2"):
        kube.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    cards = node_cards("w1", "a30", 1) + node_cards("w2", "h100-80gb", 1)
    for item in render_nodes(cards, 35, {}, True, True):
        kube.create(RESOURCE_SLICES, item)
    for item in CLASSES:
        kube.create(DEVICE_CLASSES, item)
    return kube


@pytest.fixture
def running(kube: MemoryKube) -> Iterator[RunningDraController]:
    stop = threading.Event()
    controller = start_dra_controller(kube, stop, leader_elect=False, settings=SETTINGS)
    wait_for(controller.controller.synced)
    yield controller
    stop.set()
    controller.shutdown()


def allocation(kube: MemoryKube, name: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = (kube.get(RESOURCE_CLAIMS, name, "ml").get("status") or {}).get(
        "allocation"
    )
    return found


def devices(kube: MemoryKube, name: str) -> list[str]:
    return [r["device"] for r in (allocation(kube, name) or {}).get("devices", {}).get("results", [])]


def test_a_pod_created_on_a_node_gets_its_claim_allocated_there(
    kube: MemoryKube, running: RunningDraController
) -> None:
    kube.create(RESOURCE_CLAIMS, claim("c", "gpu-a30-mig-2g.12gb"))
    created = kube.create(PODS, pod("p", "c", "w1"))
    wait_for(lambda: allocation(kube, "c") is not None, what="allocation")
    stored = kube.get(RESOURCE_CLAIMS, "c", "ml")
    assert devices(kube, "c") == ["gpu-0000-10-00-0-mig-2g-12gb-2"]  # packing order: the upper half first
    assert stored["metadata"]["finalizers"] == [DELETE_PROTECTION]
    uid = created["metadata"]["uid"]
    assert stored["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": uid}]
    assert stored["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
        "values"
    ] == ["w1"]


def test_pods_the_scheduler_places_are_left_to_it(kube: MemoryKube, running: RunningDraController) -> None:
    kube.create(RESOURCE_CLAIMS, claim("c", "gpu-a30"))
    kube.create(PODS, pod("p", "c", None))
    kube.create(RESOURCE_CLAIMS, claim("marked", "gpu-a30", {ALLOCATE_ON_NODE: "w1"}))
    wait_for(lambda: allocation(kube, "marked") is not None, what="the marked claim")
    wait_for(running.controller.idle)
    assert allocation(kube, "c") is None


def test_two_pods_never_get_one_device(kube: MemoryKube, running: RunningDraController) -> None:
    for n in range(3):
        kube.create(RESOURCE_CLAIMS, claim(f"c{n}", "gpu-a30-mig-2g.12gb"))
        kube.create(PODS, pod(f"p{n}", f"c{n}", "w1"))

    def failed() -> list[dict[str, Any]]:
        return [e for e in kube.list(EVENTS).items if e.get("reason") == "AllocationFailed"]

    wait_for(
        lambda: failed() and sum(1 for n in range(3) if allocation(kube, f"c{n}")) == 2, what="two + one"
    )
    taken = [d for n in range(3) for d in devices(kube, f"c{n}")]
    assert len(taken) == len(set(taken)) == 2  # an A30 has two 2g.12gb placements
    assert "cannot allocate on node w1" in failed()[0]["message"]
    assert not [e for e in kube.list(EVENTS).items if e.get("reason") == "DoubleAllocation"]


def test_a_conflicting_write_is_retried_not_overwritten(
    kube: MemoryKube, running: RunningDraController
) -> None:
    kube.fail_next("patch", Conflict("the object has been modified"))
    kube.create(RESOURCE_CLAIMS, claim("c", "gpu-a30", {ALLOCATE_ON_NODE: "w1"}))
    wait_for(lambda: allocation(kube, "c") is not None, what="allocation after the conflict")
    assert devices(kube, "c") == ["gpu-0000-10-00-0"]


def whole_a30() -> dict[str, Any]:
    """An allocation of w1's whole A30, as another allocator would write it."""
    result = {"request": "gpu", "driver": "gpu.deckhouse.io", "pool": "gpus/w1", "device": "gpu-0000-10-00-0"}
    return {"devices": {"results": [result]}}


def allocate_by_hand(kube: MemoryKube, name: str, annotations: dict[str, str] | None = None) -> None:
    kube.create(RESOURCE_CLAIMS, claim(name, "gpu-a30"))
    kube.patch(
        RESOURCE_CLAIMS, name, {"status": {"allocation": whole_a30()}}, subresource="status", namespace="ml"
    )
    if annotations:
        kube.patch(RESOURCE_CLAIMS, name, {"metadata": {"annotations": annotations}}, namespace="ml")


def test_an_allocated_claim_is_never_touched(kube: MemoryKube, running: RunningDraController) -> None:
    # Marked for the controller only after someone else allocated it: nothing is left to do.
    allocate_by_hand(kube, "c", {ALLOCATE_ON_NODE: "w1"})
    writes = kube.writes
    wait_for(running.controller.idle)
    assert allocation(kube, "c") == whole_a30()
    assert kube.writes == writes  # no finalizer, no status, nothing


def test_the_audit_reports_a_double_allocation_as_event_and_metric(
    kube: MemoryKube, running: RunningDraController
) -> None:
    for name in ("a", "b"):
        allocate_by_hand(kube, name)
    wait_for(
        lambda: [e for e in kube.list(EVENTS).items if e.get("reason") == "DoubleAllocation"], what="event"
    )
    text = generate_latest(running.metrics.registry).decode()
    assert 'd8_gpu_allocation_invariant_violations{kind="DoubleAllocation"} 1.0' in text
    assert 'd8_gpu_allocated_devices{device_class="gpu-a30",mode="Physical",node=""} 2.0' in text


def test_it_holds_only_the_pods_bound_to_a_node_and_not_started(
    kube: MemoryKube, running: RunningDraController
) -> None:
    """DESIGN.md D17: the server filters; Pods waiting for the scheduler and Pods that run are not
    sent, and a Pod that starts leaves the cache."""
    kube.create(RESOURCE_CLAIMS, claim("c", "gpu-a30"))
    for index in range(20):
        kube.create(PODS, pod(f"waiting-{index}", "c", None))  # the scheduler's business
    kube.create(PODS, pod("bound", "c", "w1"))
    kube.create(PODS, pod("started", "x", "w1"))
    kube.patch(PODS, "started", {"status": {"phase": "Running"}}, subresource="status", namespace="ml")
    wait_for(lambda: allocation(kube, "c") is not None, what="allocation")
    wait_for(running.controller.idle)
    assert [p["metadata"]["name"] for p in running.controller.pods.items()] == ["bound"]
    kube.patch(PODS, "bound", {"status": {"phase": "Running"}}, subresource="status", namespace="ml")
    wait_for(lambda: running.controller.pods.items() == [], what="the started Pod gone from the cache")
