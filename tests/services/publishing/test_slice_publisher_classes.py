# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The publisher and the DeviceClass watch of gpu-handler's wiring (DESIGN.md D19)."""

from __future__ import annotations

import threading

import pytest

from deckhouse_gpu.cmd.gpu_handler.wiring import follow_device_classes
from deckhouse_gpu.domain.offers.class_demand import ClassDemand, demand_of
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES, KubeError
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards
from testkit.waiting import wait_for
from tests.domain.offers.test_class_demand import WHOLE, device_class, mig


@pytest.fixture
def api() -> MemoryKube:
    kube = MemoryKube()
    kube.create(NODES, {"metadata": {"name": "w1"}})
    return kube


def make_publisher(api: MemoryKube, clock) -> SlicePublisher:
    return SlicePublisher(api, "w1", EventRecorder(api, "gpu-handler", "w1", clock), PublisherSettings())


def published(api: MemoryKube) -> list[str]:
    return [d["name"] for s in api.list(RESOURCE_SLICES).items for d in s["spec"].get("devices", [])]


def test_a_class_change_republishes_only_what_the_classes_select_then_nothing(api, clock):
    cards = node_cards("w1", "h100-80gb", 2)
    publisher = make_publisher(api, clock)
    demand: list[ClassDemand | None] = [None]
    publisher.demand = lambda: demand[0]
    publisher.publish(cards, api.get(NODES, "w1"))
    assert len(published(api)) == 2 * 26  # unknown classes: every offer
    demand[0] = demand_of([device_class("whole", WHOLE), device_class("small", mig("1g.10gb"))])
    report = publisher.publish(cards, api.get(NODES, "w1"))
    assert report.writes > 0
    assert sorted(published(api)) == sorted(
        [f"gpu-0000-{a}-00-0" for a in ("10", "18")]
        + [f"gpu-0000-{a}-00-0-mig-1g-10gb-{s}" for a in ("10", "18") for s in range(7)]
    )
    assert validate_pool(api.list(RESOURCE_SLICES).items, 35) == []
    api.calls.clear()
    assert publisher.publish(cards, api.get(NODES, "w1")).writes == 0  # a second idle pass writes nothing
    assert api.writes == 0
    demand[0] = demand_of([])
    publisher.publish(cards, api.get(NODES, "w1"))
    assert published(api) == []  # no class selects anything: nothing to scan


def test_the_watch_feeds_the_demand_and_ignores_what_selectors_do_not_see(api, clock):
    publisher = make_publisher(api, clock)
    seen: list[str] = []
    changed = threading.Event()

    def on_change(old, new):
        seen.append((new or old)["metadata"]["name"])
        changed.set()

    stop = threading.Event()
    try:
        follow_device_classes(api, publisher, on_change, stop)
        assert publisher.demand is not None
        assert publisher.demand() == demand_of([])  # listed: known to be empty
        api.create(DEVICE_CLASSES, device_class("whole", WHOLE))
        wait_for(changed.is_set, what="the class seen")
        assert publisher.demand() == demand_of([device_class("whole", WHOLE)])
        changed.clear()
        api.patch(DEVICE_CLASSES, "whole", {"metadata": {"labels": {"team": "ml"}}})
        api.create(DEVICE_CLASSES, device_class("small", mig("1g.10gb")))
        wait_for(changed.is_set, what="the second class seen")
        assert seen == ["whole", "small"]  # the label change was not a change of the demand
    finally:
        stop.set()


class Forbidden(MemoryKube):
    def list(self, resource, label_selector=None, namespace=None, field_selector=None):
        if resource == DEVICE_CLASSES:
            raise KubeError("deviceclasses is forbidden")
        return super().list(resource, label_selector, namespace, field_selector)


def test_classes_that_cannot_be_read_publish_every_offer(clock):
    api = Forbidden()
    publisher = make_publisher(api, clock)
    stop = threading.Event()
    try:
        follow_device_classes(api, publisher, lambda _o, _n: None, stop, wait_seconds=30)
        assert publisher.demand is not None
        assert publisher.demand() is None
    finally:
        stop.set()
