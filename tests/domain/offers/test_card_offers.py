# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers, counter_set, eligible
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import device_json
from testkit.gpu_objects import ready_card

A30 = "0000:17:00.0"


def test_eligibility_needs_ready_healthy_nvidia_and_capabilities():
    card = ready_card("w1", A30, "a30")
    assert eligible(card)
    assert not eligible(ready_card("w1", A30, "a30", healthy=False))
    vfio = ready_card("w1", A30, "a30")
    vfio["status"]["currentState"]["driverType"] = "VFIO"
    assert not eligible(vfio)
    bare = ready_card("w1", A30, "a30")
    del bare["status"]["capabilities"]
    assert not eligible(bare)


def test_a30_offers_physical_and_every_placement_of_every_profile():
    offers = card_offers(ready_card("w1", A30, "a30"), OfferPolicy())
    names = [offer.name for offer in offers.offers]
    assert len(set(names)) == len(names)  # in packing order (test_placement_order.py)
    assert names[0] == "gpu-0000-17-00-0"
    profiles = {
        (o.attributes["migProfile"], o.attributes["migPlacementStart"])
        for o in offers.offers
        if o.kind == "MIG"
    }
    assert ("1g.6gb", 3) in profiles
    assert ("1g.6gb+me", 0) in profiles
    assert ("4g.24gb", 0) in profiles
    assert len(offers.offers) == 1 + 4 + 4 + 2 + 2 + 1  # physical, 1g, 1g+me, 2g, 2g+me, 4g placements


def test_counter_set_and_consumption():
    card = ready_card("w1", A30, "a30")
    counters = counter_set(card)
    assert counters is not None
    assert counters.name == "gpu-0000-17-00-0"
    # The A30's four memory slices, and the one OFA engine that only the +me profiles and 4g.24gb
    # use: it keeps the +me instances to one per card. Memory, multiprocessors and the other
    # engines never bind once placements cannot overlap (test_counter_equivalence.py proves it).
    assert counters.counters == {**{f"memory-slice-{i}": "1" for i in range(4)}, "ofa-engines": "1"}
    offers = card_offers(card, OfferPolicy()).offers
    physical = offers[0]
    assert physical.consumes == counters.counters  # the whole set: MIG and Physical exclude each other
    two_g = next(o for o in offers if o.name == "gpu-0000-17-00-0-mig-2g-12gb-2")
    assert two_g.consumes == {"memory-slice-2": "1", "memory-slice-3": "1"}
    two_g_me = next(o for o in offers if o.name == "gpu-0000-17-00-0-mig-2g-12gb-me-2")
    assert two_g_me.consumes == {"memory-slice-2": "1", "memory-slice-3": "1", "ofa-engines": "1"}
    assert two_g.capacity["memory"].value == "11968Mi"  # what a claim sees is unchanged


def test_the_full_layout_stays_available_for_comparison():
    card = ready_card("w1", A30, "a30")
    counters = counter_set(card, OfferPolicy(counters="full"))
    assert counters is not None
    assert counters.counters["memory"] == "24576Mi"
    assert [k for k in counters.counters if k.startswith("memory-slice-")] == [
        f"memory-slice-{i}" for i in range(4)
    ]
    assert "encoders" not in counters.counters  # no zero counters
    offers = card_offers(card, OfferPolicy(counters="full")).offers
    assert offers[0].consumes == counters.counters
    two_g = next(o for o in offers if o.name == "gpu-0000-17-00-0-mig-2g-12gb-2")
    assert two_g.consumes["memory"] == two_g.capacity["memory"].value
    # 2g.12gb: 28 multiprocessors, 2 copy engines, 2 decoders (nvml_models/a30.yaml)
    assert {k: two_g.consumes[k] for k in ("multiprocessors", "copy-engines", "decoders")} == {
        "multiprocessors": "28",
        "copy-engines": "2",
        "decoders": "2",
    }


def test_attributes_follow_the_spec_and_limits():
    physical, mig = card_offers(ready_card("w1", A30, "a30", numa_node=0), OfferPolicy()).offers[:2]
    assert physical.attributes["deviceType"] == "Physical"
    assert physical.attributes["resource.kubernetes.io/pciBusID"] == A30
    assert physical.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:17"
    assert (physical.attributes["ccMajor"], physical.attributes["ccMinor"]) == (8, 0)
    assert physical.attributes["device"] == "a30-pcie"
    assert mig.attributes["deviceType"] == "MIG"
    assert "resource.kubernetes.io/pciBusID" not in mig.attributes  # a MIG slice is not a PCI function
    for offer in (physical, mig):
        assert len(offer.attributes) + len(offer.capacity) <= 32
        assert all(len(str(v).encode()) <= 64 for v in offer.attributes.values())


def test_cards_without_mig_have_no_counter_set():
    offers = card_offers(ready_card("w1", "0000:b1:00.0", "t4"), OfferPolicy())
    assert offers.counter_set is None
    assert [o.kind for o in offers.offers] == ["Physical"]
    assert offers.offers[0].consumes == {}


@pytest.mark.parametrize(
    ("policy", "kinds", "shared"),
    [
        (OfferPolicy(mig=False), {"Physical"}, False),
        (OfferPolicy(sharing=True), {"Physical"}, True),
        (OfferPolicy(sharing=True, consumable=False), {"Physical", "MIG"}, False),  # cannot share: as usual
        (OfferPolicy(partitionable=False), {"Physical"}, False),
    ],
)
def test_node_policy(policy, kinds, shared):
    offers = card_offers(ready_card("w1", A30, "a30"), policy)
    assert {o.kind for o in offers.offers} == kinds
    assert offers.offers[0].shared is shared
    if policy.partitionable and policy.mig and not shared:
        assert offers.counter_set is not None
    else:
        assert offers.counter_set is None
        assert all(not o.consumes for o in offers.offers)


def test_shared_offer_capacity_and_policies():
    (offer,) = card_offers(ready_card("w1", A30, "a30"), OfferPolicy(sharing=True)).offers
    share = offer.capacity["sharePercent"]
    assert share.value == "100"
    assert share.policy is not None
    assert (share.policy.default, share.policy.min, share.policy.max, share.policy.step) == (
        "100",
        "1",
        "100",
        "1",
    )
    memory = offer.capacity["memory"]
    assert memory.policy is not None
    # As the API server stores quantities: a slice stored differently is rewritten on every pass.
    assert (memory.policy.default, memory.policy.max) == ("0", "24Gi")


def test_active_mode_leaves_conflicting_offers_out():
    mig_active = card_offers(ready_card("w1", A30, "a30"), OfferPolicy(), active="MIG")
    assert {o.kind for o in mig_active.offers} == {"MIG"}
    physical_active = card_offers(ready_card("w1", A30, "a30"), OfferPolicy(), active="Physical")
    assert [o.kind for o in physical_active.offers] == ["Physical"]
    assert physical_active.counter_set is not None  # still consumed by the Physical offer


NUMA = "resource.kubernetes.io/numaNode"
POLICIES = [
    OfferPolicy(),
    OfferPolicy(sharing=True),
    OfferPolicy(mig=False),
    OfferPolicy(partitionable=False),
]


@pytest.mark.parametrize("numa_node", [0, 1])
@pytest.mark.parametrize("policy", POLICIES)
def test_every_offer_carries_the_cards_numa_node_as_an_int(policy, numa_node):
    offers = card_offers(ready_card("w1", A30, "a30", numa_node=numa_node), policy).offers
    for offer in offers:  # Physical, shared and MIG offers alike
        assert offer.attributes[NUMA] == numa_node
        assert device_json(offer)["attributes"][NUMA] == {"int": numa_node}  # 0 too: not left out as falsy


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("unknown", [None, -1])
def test_no_numa_node_attribute_when_the_node_is_unknown(policy, unknown):
    card = ready_card("w1", A30, "a30")
    if unknown is not None:
        card["status"]["pciInfo"]["numaNode"] = unknown  # the kernel's "no affinity", if it ever got here
    offers = card_offers(card, policy).offers
    assert {o.kind for o in offers} >= {"Physical"}
    assert all(NUMA not in offer.attributes for offer in offers)
    assert all(NUMA not in device_json(offer)["attributes"] for offer in offers)


@pytest.mark.parametrize("model", ["a30", "a100-40gb", "a100-80gb", "h100-80gb", "l40s", "t4"])
def test_every_offer_stays_within_the_attribute_limit_with_every_optional_attribute(model):
    # KUBERNETES-FACTS.md F1.1: at most 32 attributes and capacities per device, on 1.34 to 1.37 alike.
    card = ready_card("w1", "0000:3b:00.0", model, numa_node=1)
    offers = [o for policy in POLICIES for o in card_offers(card, policy).offers]
    assert all(NUMA in o.attributes and "resource.kubernetes.io/pcieRoot" in o.attributes for o in offers)
    most = max(len(o.attributes) + len(o.capacity) for o in offers)
    assert most <= 32
    # docs/DRA.md says "an offer has at most 18": a MIG offer has them all, a card without MIG fewer.
    assert most == 18 if model not in ("l40s", "t4") else most < 18
