# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The running controller against the in-memory API: watches drive DriverReady within moments."""

import threading
from collections.abc import Iterator

import pytest

from deckhouse_gpu.cmd.gpu_controller import ControllerOptions, RunningController, start_controller
from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Unavailable
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.waiting import wait_for
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

# Only the watches can deliver a change in these tests: the safety resync never comes.
SETTINGS = ControllerSettings(debounce_seconds=0.02, resync_seconds=3600, watch_timeout_seconds=2)


def status_of(kube: MemoryKube, name: str) -> str | None:
    condition = driver_ready(kube, name)
    return None if condition is None else condition["status"]


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    for node in ("w1", "w2"):
        add_node(kube, node)
        add_card(kube, f"{node}-gpu-0", node)
    add_pod(kube, "val-1", "w1", crashing_status())
    return kube


@pytest.fixture
def running(kube) -> Iterator[RunningController]:
    stop = threading.Event()
    controller = start_controller(kube, stop, ControllerOptions(SETTINGS, leader_elect=False, identity="c-0"))
    yield controller
    stop.set()
    controller.shutdown()


def test_first_pass_judges_every_card(kube, running):
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "False" and status_of(kube, "w2-gpu-0") == "Unknown")
    wait_for(running.controller.idle)
    assert running.controller.readiness() == (True, "caches synced")
    assert running.controller.health() == (True, "ok")


def test_pod_readiness_flip_reaches_the_card_through_the_watch(kube, running):
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "False")
    set_pod_status(kube, "val-1", ready_status())
    # The resync comes after an hour (SETTINGS): within the wait only the watch can deliver it.
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "True", timeout=10)
    set_pod_status(kube, "val-1", crashing_status())
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "False", timeout=5)


def test_one_pod_change_touches_only_its_node(kube, running):
    wait_for(lambda: status_of(kube, "w2-gpu-0") == "Unknown")
    wait_for(running.controller.idle)
    w2_version = kube.get(PHYSICAL_GPUS, "w2-gpu-0")["metadata"]["resourceVersion"]
    patches = kube.calls["patch"]
    set_pod_status(kube, "val-1", ready_status())
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "True")
    wait_for(running.controller.idle)
    assert kube.calls["patch"] == patches + 2  # the pod's status and w1's card, nothing else
    assert kube.get(PHYSICAL_GPUS, "w2-gpu-0")["metadata"]["resourceVersion"] == w2_version


def test_validator_arriving_on_a_node_and_leaving_it(kube, running):
    wait_for(lambda: status_of(kube, "w2-gpu-0") == "Unknown")
    add_pod(kube, "val-2", "w2", ready_status())
    wait_for(lambda: status_of(kube, "w2-gpu-0") == "True")
    kube.delete(PODS, "val-2", NAMESPACE)
    wait_for(lambda: status_of(kube, "w2-gpu-0") == "Unknown")


def test_new_card_and_new_node_are_picked_up(kube, running):
    wait_for(running.controller.idle)
    add_card(kube, "w3-gpu-0", "w3")  # the agent may be faster than the Node watch
    add_pod(kube, "val-3", "w3", ready_status())
    wait_for(running.controller.idle)
    assert status_of(kube, "w3-gpu-0") is None  # no Node object yet: left alone
    add_node(kube, "w3")
    wait_for(lambda: status_of(kube, "w3-gpu-0") == "True")


def test_condition_removed_by_someone_else_is_restored(kube, running):
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "False")
    kube.patch(PHYSICAL_GPUS, "w1-gpu-0", {"status": {"conditions": []}}, subresource="status")
    wait_for(lambda: status_of(kube, "w1-gpu-0") == "False")


def test_failed_write_is_retried_with_backoff(kube):
    kube.fail_next("patch", Unavailable("apiserver restarting"))
    stop = threading.Event()
    settings = ControllerSettings(
        debounce_seconds=0.01, resync_seconds=3600, backoff_initial_seconds=0.05, watch_timeout_seconds=2
    )
    running = start_controller(kube, stop, ControllerOptions(settings, leader_elect=False, identity="c-0"))
    try:
        wait_for(lambda: status_of(kube, "w1-gpu-0") == "False" and status_of(kube, "w2-gpu-0") == "Unknown")
    finally:
        stop.set()
        running.shutdown()


def test_safety_resync_passes_over_every_node_without_events(kube):
    stop = threading.Event()
    settings = ControllerSettings(debounce_seconds=0.01, resync_seconds=0.05, watch_timeout_seconds=2)
    running = start_controller(kube, stop, ControllerOptions(settings, leader_elect=False, identity="c-0"))
    registry = running.metrics.registry

    def passes() -> float:
        return registry.get_sample_value("d8_gpu_controller_reconciles_total", {"result": "success"}) or 0.0

    try:
        wait_for(running.controller.idle)
        wait_for(lambda: status_of(kube, "w2-gpu-0") == "Unknown")
        before, writes = passes(), kube.writes
        wait_for(lambda: passes() >= before + 4)  # both nodes, twice, with no change at all
        assert kube.writes == writes  # and nothing to write
    finally:
        stop.set()
        running.shutdown()


def test_stops_promptly(kube):
    stop = threading.Event()
    running = start_controller(kube, stop, ControllerOptions(SETTINGS, leader_elect=False, identity="c-0"))
    wait_for(running.controller.idle)
    stop.set()
    running.shutdown(timeout=2)
    workers = running.controller.runtime.workers()
    assert workers
    assert not any(t.is_alive() for t in workers)
    assert kube.get(NODES, "w1")
