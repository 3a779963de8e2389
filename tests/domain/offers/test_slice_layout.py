# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Rendered pools obey every ResourceSlice rule, for every simulated model, node size and version."""

from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import LayoutError, layout, pool_name, render
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS
from testkit.gpu_objects import node_cards, ready_card

POLICIES = {
    "default": OfferPolicy(),
    "sharing": OfferPolicy(sharing=True),
    "no-mig": OfferPolicy(mig=False),
    "no-partitionable": OfferPolicy(partitionable=False),
    "no-consumable-sharing": OfferPolicy(sharing=True, consumable=False),
}


def pool(model: str, count: int, minor: int, policy: OfferPolicy) -> list[dict[str, Any]]:
    cards = [card_offers(card, policy) for card in node_cards("w1", model, count)]
    return render("w1", cards, minor, 3, {"apiVersion": "v1", "kind": "Node", "name": "w1", "uid": "u1"})


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("minor", [34, 35])
@pytest.mark.parametrize("count", [1, 2, 3, 8, 16])
@pytest.mark.parametrize("model", sorted(GPU_MODELS))
def test_every_rendered_pool_is_valid(model, count, minor, policy):
    slices = pool(model, count, minor, POLICIES[policy])
    problems = validate_pool(slices, minor)
    assert problems == [], "\n".join(map(str, problems))
    devices = [d["name"] for s in slices for d in s["spec"].get("devices", [])]
    assert len(devices) == len(set(devices))
    assert all(
        s["spec"]["pool"] == {"name": "gpus/w1", "generation": 3, "resourceSliceCount": len(slices)}
        for s in slices
    )
    assert all(
        s["spec"]["nodeName"] == "w1" and s["metadata"]["ownerReferences"][0]["uid"] == "u1" for s in slices
    )


def test_sixteen_h100_layouts():
    v34 = pool("h100-80gb", 16, 34, OfferPolicy())
    assert len(v34) == 16  # a slice per card, its counter set inline
    assert all(len(s["spec"]["sharedCounters"]) == 1 and len(s["spec"]["devices"]) == 26 for s in v34)
    v35 = pool("h100-80gb", 16, 35, OfferPolicy())
    counters = [s for s in v35 if "sharedCounters" in s["spec"]]
    devices = [s for s in v35 if "devices" in s["spec"]]
    assert [len(s["spec"]["sharedCounters"]) for s in counters] == [8, 8]
    assert all("devices" not in s["spec"] for s in counters)  # mutually exclusive on 1.35
    assert [len(s["spec"]["devices"]) for s in devices] == [52] * 8  # two whole cards per slice, <= 64
    assert sum(len(s["spec"]["devices"]) for s in devices) == 16 * 26


def test_the_1_34_layout_is_invalid_on_1_35_and_back():
    assert validate_pool(pool("a30", 2, 34, OfferPolicy()), 35)
    assert validate_pool(pool("a30", 2, 35, OfferPolicy()), 34)


def test_names_are_stable_and_cards_in_address_order():
    first = layout("w1", [card_offers(c, OfferPolicy()) for c in node_cards("w1", "a30", 2)], 35)
    again = layout("w1", [card_offers(c, OfferPolicy()) for c in reversed(node_cards("w1", "a30", 2))], 35)
    assert first == again
    # Each card's devices together, cards in address order: the scheduler's first fit fills a
    # partly used card before a free one (domain/offers/placement_order.py).
    cards = [d.card for s in first for d in s.devices]
    assert cards == sorted(cards)
    names = [d.name for s in first for d in s.devices]
    assert len(set(names)) == len(names)


def test_non_mig_cards_pack_128_per_slice():
    cards = [
        card_offers(ready_card("w1", f"0000:{i // 32 + 1:02x}:{i % 32:02x}.0", "t4"), OfferPolicy())
        for i in range(130)
    ]
    slices = render("w1", cards, 35, 1, None)
    assert [len(s["spec"]["devices"]) for s in slices] == [128, 2]
    assert validate_pool(slices, 35) == []


def test_long_node_names_stay_valid():
    node = "n" * 250
    assert len(pool_name(node)) <= 253
    cards = [card_offers(ready_card(node, "0000:17:00.0", "a30"), OfferPolicy())]
    slices = render(node, cards, 35, 1, None)
    assert validate_pool(slices, 35) == []


def test_a_card_too_big_for_a_1_34_slice_is_refused():
    card = card_offers(ready_card("w1", "0000:17:00.0", "a30"), OfferPolicy())
    huge = type(card)(card.address, card.counter_set, card.offers * 10)
    with pytest.raises(LayoutError, match=r"one 1\.34 slice holds 128"):
        layout("w1", [huge], 34)
