# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import copy

import pytest

from deckhouse_gpu.domain.offers.dropped_fields import CONSUMABLE, PARTITIONABLE
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import EVENTS, NODES, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.slice_publisher import InvalidPool, PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.feature_gates import gates_off
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards, ready_card


@pytest.fixture
def api():
    kube = MemoryKube()
    kube.create(NODES, {"metadata": {"name": "w1"}})
    return kube


def publisher(api, clock, settings=None):
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    return SlicePublisher(api, "w1", events, settings or PublisherSettings())


def node(api):
    return api.get(NODES, "w1")


def slices(api):
    return api.list(RESOURCE_SLICES).items


def devices(api):
    return [d for s in slices(api) for d in s["spec"].get("devices", [])]


def test_first_publish_then_nothing_to_write(api, clock):
    cards = node_cards("w1", "a30", 2)
    pub = publisher(api, clock)
    first = pub.publish(cards, node(api))
    assert (first.slices, first.devices, first.generation, first.writes) == (2, 28, 1, 2)
    stored = slices(api)
    assert validate_pool(stored, 35) == []
    assert all(s["metadata"]["ownerReferences"][0]["uid"] == node(api)["metadata"]["uid"] for s in stored)
    api.calls.clear()
    again = pub.publish(cards, node(api))
    assert again.writes == 0
    assert api.writes == 0


def test_a_change_rewrites_the_pool_with_a_new_generation_and_drops_stale_slices(api, clock):
    api.version = (1, 34)
    cards = node_cards("w1", "a30", 2)
    pub = publisher(api, clock)
    pub.publish(cards, node(api))
    assert len(slices(api)) == 2  # one per card on 1.34
    unhealthy = copy.deepcopy(cards[1])
    unhealthy["status"]["conditions"][1]["status"] = "Unknown"
    report = pub.publish([cards[0], unhealthy], node(api))
    assert report.generation == 2
    stored = slices(api)
    assert len(stored) == 1
    assert stored[0]["spec"]["pool"] == {"name": "gpus/w1", "generation": 2, "resourceSliceCount": 1}
    assert validate_pool(stored, 34) == []


def test_node_labels_switch_between_sharing_mig_and_exclusive(api, clock):
    cards = [ready_card("w1", "0000:17:00.0", "a30")]
    pub = publisher(api, clock)
    pub.publish(cards, node(api))
    assert len(devices(api)) == 14
    api.patch(NODES, "w1", {"metadata": {"labels": {"gpu.deckhouse.io/sharing": "true"}}})
    pub.publish(cards, node(api))
    (shared,) = devices(api)
    assert shared["allowMultipleAllocations"] is True
    assert "sharedCounters" not in str(slices(api))
    api.patch(
        NODES,
        "w1",
        {"metadata": {"labels": {"gpu.deckhouse.io/sharing": None, "gpu.deckhouse.io/mig": "false"}}},
    )
    pub.publish(cards, node(api))
    (exclusive,) = devices(api)
    assert "allowMultipleAllocations" not in exclusive
    assert validate_pool(slices(api), 35) == []


def test_dropped_partitionable_fields_fall_back_once(api, clock):
    api.drop_fields = gates_off(partitionable=True)
    cards = node_cards("w1", "a30", 2)
    pub = publisher(api, clock)
    report = pub.publish(cards, node(api))
    assert report.fallback == [PARTITIONABLE]
    stored = devices(api)
    assert [d["attributes"]["deviceType"]["string"] for d in stored] == ["Physical", "Physical"]
    assert validate_pool(slices(api), 35) == []
    warnings = [
        e for e in api.list(EVENTS, namespace="default").items if e["reason"] == "DRAFeatureUnavailable"
    ]
    assert len(warnings) == 1
    assert "DRAPartitionableDevices" in warnings[0]["message"]
    api.calls.clear()
    assert pub.publish(cards, node(api)).writes == 0  # no loop
    assert api.writes == 0


def test_dropped_consumable_fields_fall_back_to_exclusive_cards(api, clock):
    api.drop_fields = gates_off(consumable=True)
    api.patch(NODES, "w1", {"metadata": {"labels": {"gpu.deckhouse.io/sharing": "true"}}})
    pub = publisher(api, clock)
    report = pub.publish(node_cards("w1", "a30", 1), node(api))
    assert report.fallback == [CONSUMABLE]
    assert not any(d.get("allowMultipleAllocations") for d in devices(api))
    assert validate_pool(slices(api), 35) == []


def test_a_feature_forced_on_is_reported_not_given_up(api, clock):
    api.drop_fields = gates_off(partitionable=True)
    pub = publisher(api, clock, PublisherSettings(partitionable="on"))
    report = pub.publish(node_cards("w1", "a30", 1), node(api))
    assert report.fallback == []
    assert pub.features[PARTITIONABLE]


def test_a_feature_forced_off_is_never_used(api, clock):
    pub = publisher(api, clock, PublisherSettings(partitionable="off"))
    pub.publish(node_cards("w1", "a30", 1), node(api))
    assert [d["name"] for d in devices(api)] == ["gpu-0000-10-00-0"]


def test_no_eligible_card_removes_the_pool_and_other_drivers_are_untouched(api, clock):
    other = {
        "metadata": {"name": "other", "labels": {"gpu.deckhouse.io/node": "w1"}},
        "spec": {"driver": "example.com", "nodeName": "w1"},
    }
    api.create(RESOURCE_SLICES, other)
    pub = publisher(api, clock)
    pub.publish(node_cards("w1", "t4", 1), node(api))
    report = pub.publish([], node(api))
    assert report.slices == 0
    assert [s["metadata"]["name"] for s in slices(api)] == ["other"]


def test_an_invalid_pool_is_never_written(api, clock, monkeypatch):
    pub = publisher(api, clock)
    pub.publish(node_cards("w1", "a30", 1), node(api))
    before = slices(api)
    from deckhouse_gpu.domain.offers import slice_layout  # noqa: PLC0415

    monkeypatch.setattr(slice_layout, "pool_name", lambda node: "GPUs//" + node)  # a renderer bug
    api.calls.clear()
    with pytest.raises(InvalidPool, match="pool"):
        pub.publish(node_cards("w1", "a30", 2), node(api))
    assert api.writes == 0
    assert slices(api) == before


def test_after_a_control_plane_upgrade_the_pool_moves_to_the_new_layout(api, clock, monkeypatch):
    api.version = (1, 34)
    pub = publisher(api, clock)
    cards = node_cards("w1", "a30", 2)
    pub.publish(cards, node(api))
    assert all("sharedCounters" in s["spec"] and "devices" in s["spec"] for s in slices(api))
    api.version = (1, 35)
    assert pub.publish(cards, node(api)).writes == 0  # the version is cached for a while
    monkeypatch.setattr("deckhouse_gpu.services.publishing.slice_publisher.VERSION_TTL_SECONDS", 0.0)
    report = pub.publish(cards, node(api))
    assert report.generation == 2
    stored = slices(api)
    assert not any("sharedCounters" in s["spec"] and "devices" in s["spec"] for s in stored)
    assert validate_pool(stored, 35) == []


def test_a_content_change_updates_only_that_slice_in_place(api, clock):
    api.version = (1, 34)
    cards = node_cards("w1", "a30", 3)
    pub = publisher(api, clock)
    pub.publish(cards, node(api))
    upgraded = copy.deepcopy(cards)
    upgraded[1]["status"]["currentState"]["nvidia"]["driverVersion"] = "580.95.05"
    api.calls.clear()
    report = pub.publish(upgraded, node(api))
    assert (report.writes, report.generation) == (1, 1)  # one slice, same generation
    assert api.calls["patch"] == 1
    assert validate_pool(slices(api), 34) == []


def test_in_place_updates_on_1_35_keep_counter_references_resolvable(api, clock):
    pub = publisher(api, clock)
    pub.publish(node_cards("w1", "a30", 2), node(api))
    order: list[str] = []
    patch = api.patch

    def recording(resource, name, body, subresource=None, namespace=None):
        order.append(name)
        return patch(resource, name, body, subresource, namespace)

    api.patch = recording
    counters, devices_slice = "w1-gpu-deckhouse-io-counters-0", "w1-gpu-deckhouse-io-partitionable-0"
    grown = pub.publish(node_cards("w1", "a30", 3), node(api))  # same two slices, one more card
    assert grown.generation == 1
    assert order == [counters, devices_slice]  # the new set exists before devices point at it
    assert validate_pool(slices(api), 35) == []
    order.clear()
    shrunk = pub.publish(node_cards("w1", "a30", 2), node(api))
    assert shrunk.generation == 1
    assert order == [devices_slice, counters]  # devices stop pointing at the set before it goes
    assert validate_pool(slices(api), 35) == []


def test_devices_moving_between_slices_go_through_a_new_generation(api, clock):
    cards = node_cards("w1", "h100-80gb", 3)  # 26 offers each: two cards share the first slice
    pub = publisher(api, clock)
    pub.publish(cards, node(api))
    first = {s["metadata"]["name"]: len(s["spec"].get("devices", [])) for s in slices(api)}
    assert first["w1-gpu-deckhouse-io-partitionable-0"] == 52
    unhealthy = copy.deepcopy(cards[0])
    unhealthy["status"]["conditions"][1]["status"] = "Unknown"
    report = pub.publish([unhealthy, cards[1], cards[2]], node(api))  # the third card moves up
    assert report.generation == 2
    assert validate_pool(slices(api), 35) == []
