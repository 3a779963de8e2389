# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One node's pass against the in-memory API: writes, no-op passes, conflicts, events, failures."""

from datetime import timedelta
from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.driver_ready import card_node, pod_node
from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, Forbidden, Unavailable
from deckhouse_gpu.services.inventory.driver_ready_reconciler import (
    ERROR,
    SKIPPED,
    SUCCESS,
    DriverReadyReconciler,
)
from deckhouse_gpu.services.inventory.driver_ready_writer import DriverReadyWriter
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from tests.support.controller_objects import (
    NAMESPACE,
    add_card,
    add_node,
    add_pod,
    crashing_status,
    driver_ready,
    ready_status,
    set_pod_status,
)

HEALTHY = {
    "type": "HardwareHealthy",
    "status": "True",
    "reason": "NVMLHealthy",
    "message": "NVML answers",
    "lastTransitionTime": "2026-11-20T00:00:00Z",
}


class Harness:
    def __init__(self, kube: MemoryKube, clock, leading: list[bool]) -> None:
        self.kube = kube
        ignore = lambda old, new: None  # noqa: E731
        self.cards = Informer(kube, PHYSICAL_GPUS, ignore, index_by=card_node)
        self.pods = Informer(
            kube,
            PODS,
            ignore,
            namespace=NAMESPACE,
            label_selector="app=nvidia-driver-validator",
            index_by=pod_node,
        )
        self.nodes = Informer(kube, NODES, ignore)
        writer = DriverReadyWriter(kube, lambda: leading[0])
        events = EventRecorder(kube, "gpu-controller", "controller-0", clock)
        self.reconciler = DriverReadyReconciler(self.cards, self.pods, self.nodes, writer, events, clock)

    def reconcile(self, node: str = "w1"):
        for informer in (self.cards, self.pods, self.nodes):
            informer.list_once()  # what the watches would have delivered by now
        return self.reconciler.reconcile(node)

    def events(self) -> list[dict[str, Any]]:
        return self.kube.list(EVENTS, namespace="default").items


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    add_node(kube, "w1")
    add_card(kube, "w1-gpu-0", "w1")
    add_card(kube, "w1-gpu-1", "w1")
    return kube


@pytest.fixture
def leading() -> list[bool]:
    return [True]


@pytest.fixture
def harness(kube, clock, leading) -> Harness:
    return Harness(kube, clock, leading)


def test_ready_validator_sets_true_on_every_card_of_the_node(kube, harness):
    add_pod(kube, "val-a", "w1", ready_status())
    outcome = harness.reconcile()
    assert outcome.result == SUCCESS
    assert outcome.written == ["w1-gpu-0", "w1-gpu-1"]
    for name in outcome.written:
        condition = driver_ready(kube, name)
        assert condition is not None
        assert (condition["status"], condition["reason"]) == ("True", "ValidatorReady")
        assert condition["lastTransitionTime"] == "2026-11-21T12:00:00Z"


def test_node_without_validator_gets_validator_missing(kube, harness):
    add_pod(kube, "val-b", "w2", ready_status())  # the DaemonSet runs elsewhere only
    harness.reconcile()
    condition = driver_ready(kube, "w1-gpu-0")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("Unknown", "ValidatorMissing")


def test_second_pass_writes_nothing(kube, harness):
    add_pod(kube, "val-a", "w1", crashing_status())
    harness.reconcile()
    patches, events = kube.calls["patch"], len(harness.events())
    outcome = harness.reconcile()
    assert outcome.written == []
    assert kube.calls["patch"] == patches
    assert len(harness.events()) == events


def test_status_change_moves_transition_time_and_records_one_event_per_card(kube, harness, clock):
    add_pod(kube, "val-a", "w1", crashing_status())
    harness.reconcile()
    first = harness.events()
    assert {e["reason"] for e in first} == {"ValidatorNotReady"}
    assert {e["type"] for e in first} == {"Warning"}
    assert {e["involvedObject"]["name"] for e in first} == {"w1-gpu-0", "w1-gpu-1"}
    assert first[0]["message"].startswith("DriverReady unset -> False: validator pod d8-gpu/val-a")

    clock.moment += timedelta(minutes=5)
    set_pod_status(kube, "val-a", crashing_status("another message"))
    harness.reconcile()  # the message changes, the status does not: no event, same transition time
    assert len(harness.events()) == 2
    condition = driver_ready(kube, "w1-gpu-0")
    assert condition is not None
    assert "another message" in condition["message"]
    assert condition["lastTransitionTime"] == "2026-11-21T12:00:00Z"

    clock.moment += timedelta(minutes=5)
    set_pod_status(kube, "val-a", ready_status())
    harness.reconcile()
    condition = driver_ready(kube, "w1-gpu-0")
    assert condition is not None
    assert condition["lastTransitionTime"] == "2026-11-21T12:10:00Z"
    latest = [e for e in harness.events() if e["reason"] == "ValidatorReady"]
    assert len(latest) == 2
    assert latest[0]["type"] == "Normal"
    assert latest[0]["message"].startswith("DriverReady False -> True:")


def test_conflict_is_retried_on_a_fresh_read_keeping_other_writers_fields(kube, harness):
    add_pod(kube, "val-a", "w1", ready_status())
    for informer in (harness.cards, harness.pods, harness.nodes):
        informer.list_once()
    # gpu-handler writes after our cache was filled: our copy of the card is now stale.
    stored = kube.get(PHYSICAL_GPUS, "w1-gpu-0")
    kube.patch(
        PHYSICAL_GPUS,
        "w1-gpu-0",
        {
            "metadata": {"resourceVersion": stored["metadata"]["resourceVersion"]},
            "status": {"conditions": [HEALTHY], "capabilities": {"productName": "NVIDIA A30"}},
        },
        subresource="status",
    )
    patches = kube.calls["patch"]
    outcome = harness.reconciler.reconcile("w1")
    assert outcome.result == SUCCESS
    assert kube.calls["patch"] == patches + 3  # gpu-0: conflict, then success; gpu-1: success
    status = kube.get(PHYSICAL_GPUS, "w1-gpu-0")["status"]
    assert [c["type"] for c in status["conditions"]] == ["HardwareHealthy", "DriverReady"]
    assert status["conditions"][0] == HEALTHY
    assert status["capabilities"] == {"productName": "NVIDIA A30"}
    assert status["nodeInfo"] == {"nodeName": "w1"}


def test_one_card_failing_does_not_stop_the_others(kube, harness):
    add_pod(kube, "val-a", "w1", ready_status())
    kube.fail_next("patch", Unavailable("etcd leader changed"))
    outcome = harness.reconcile()
    assert outcome.result == ERROR
    assert outcome.written == ["w1-gpu-1"]
    assert "w1-gpu-0: Unavailable" in outcome.failures[0]
    assert driver_ready(kube, "w1-gpu-0") is None
    assert harness.reconcile().written == ["w1-gpu-0"]  # the retry finishes the job


def test_forbidden_is_an_error_with_a_hint(kube, harness, caplog):
    add_pod(kube, "val-a", "w1", ready_status())
    kube.fail_next("patch", Forbidden("cannot patch physicalgpus/status"), times=2)
    assert harness.reconcile().result == ERROR
    assert any(getattr(r, "hint", "").startswith("check gpu-controller's RBAC") for r in caplog.records)


def test_card_of_a_deleted_node_is_left_alone(kube, harness):
    kube.delete(NODES, "w1")  # the cards have no owner reference here, so they stay
    add_pod(kube, "val-a", "w1", ready_status())
    patches = kube.calls["patch"]
    outcome = harness.reconcile()
    assert outcome.result == SKIPPED
    assert kube.calls["patch"] == patches


def test_other_vendors_cards_are_not_touched(kube, harness):
    add_card(kube, "w1-amd-0", "w1", vendor="amd")
    add_pod(kube, "val-a", "w1", ready_status())
    assert "w1-amd-0" not in harness.reconcile().written
    assert driver_ready(kube, "w1-amd-0") is None


def test_lost_leadership_stops_the_pass_before_any_write(kube, harness, leading):
    add_pod(kube, "val-a", "w1", ready_status())
    leading[0] = False
    patches = kube.calls["patch"]
    assert harness.reconcile().result == SKIPPED
    assert kube.calls["patch"] == patches


def test_card_deleted_meanwhile_is_not_an_error(kube, harness):
    add_pod(kube, "val-a", "w1", ready_status())
    for informer in (harness.cards, harness.pods, harness.nodes):
        informer.list_once()
    kube.delete(PHYSICAL_GPUS, "w1-gpu-0")
    outcome = harness.reconciler.reconcile("w1")
    assert outcome.result == SUCCESS
    assert outcome.written == ["w1-gpu-1"]
