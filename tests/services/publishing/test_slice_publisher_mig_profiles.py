# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The publisher and the MIG profile policy: the node's rule decides what its cards offer, and a
rule naming a profile the card lacks is said once, on the Node."""

from __future__ import annotations

from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import EVENTS, NODES, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards

H100 = "h100-sxm5-80gb"
RULES = (
    MigProfileRule(H100, frozenset({"1g.10gb", "3g.40gb"}), (("pool", "inference"),)),
    MigProfileRule(H100, frozenset({"7g.80gb", "1g.5gb"})),
)


def world(clock, labels: dict[str, str]) -> tuple[MemoryKube, SlicePublisher]:
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1", "uid": "u1", "labels": labels}})
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    return api, SlicePublisher(api, "w1", events, PublisherSettings(mig_profiles=RULES))


def profiles(api: MemoryKube) -> dict[str, int]:
    found: dict[str, int] = {}
    for item in api.list(RESOURCE_SLICES).items:
        for device in item["spec"].get("devices", []):
            name = device["attributes"].get("migProfile", {}).get("string", "whole")
            found[name] = found.get(name, 0) + 1
    return found


def test_the_rule_the_node_matches_decides_the_offers(clock):
    api, publisher = world(clock, {"pool": "inference"})
    cards = node_cards("w1", "h100-80gb", 2)
    publisher.publish(cards, api.get(NODES, "w1"))
    assert profiles(api) == {"whole": 2, "1g.10gb": 14, "3g.40gb": 4}
    assert validate_pool(api.list(RESOURCE_SLICES).items, 35) == []
    assert not api.list(EVENTS).items  # both profiles exist on an H100


def test_an_unknown_profile_is_reported_once_and_the_known_ones_offered(clock):
    api, publisher = world(clock, {})
    cards = node_cards("w1", "h100-80gb", 2)
    for _ in range(3):
        publisher.publish(cards, api.get(NODES, "w1"))
    assert profiles(api) == {"whole": 2, "7g.80gb": 2}
    events = [e for e in api.list(EVENTS).items if e["reason"] == "MIGProfilesUnknown"]
    # One for the model, not one per card or per publish.
    assert len(events) == 1
    assert {e["involvedObject"]["kind"] for e in events} == {"Node"}
    assert all("offers 1g.5gb for h100-sxm5-80gb" in e["message"] for e in events)
    assert all(e["type"] == "Warning" for e in events)
