# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The packing order of a card's MIG placements (domain/offers/placement_order.py, DESIGN.md D19)."""

from __future__ import annotations

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from testkit.gpu_objects import ready_card
from tests.domain.offers.test_class_demand import device_class, mig

H100 = "0000:17:00.0"


def order(model: str, policy: OfferPolicy) -> list[tuple[str, int]]:
    offers = card_offers(ready_card("w1", H100, model), policy).offers
    return [
        (str(o.attributes["migProfile"]), int(o.attributes["migPlacementStart"]))
        for o in offers
        if o.kind == "MIG"
    ]


def starts(found: list[tuple[str, int]], profile: str) -> list[int]:
    return [start for name, start in found if name == profile]


def test_h100_small_instances_go_where_they_block_the_fewest_larger_placements():
    found = order("h100-80gb", OfferPolicy())
    # Slice 6 is under 1g.20gb@6, 3g@4 and 7g only; 4 and 5 also under 2g@4; 0-3 under 4g@0 too.
    assert starts(found, "1g.10gb") == [6, 5, 4, 3, 2, 1, 0]
    assert starts(found, "1g.20gb") == [6, 4, 2, 0]
    assert starts(found, "2g.20gb") == [4, 2, 0]
    # Smaller profiles first, so a class accepting several gets the smallest that fits.
    sizes = [name.split("g.")[0] for name, _ in found]
    assert sizes == sorted(sizes)
    assert found[-1] == ("7g.80gb", 0)


def test_the_order_follows_what_is_offered():
    """With only 1g.10gb and 3g.40gb offered the 1g instances fill the upper half first, leaving
    3g at 0 free; the whole card comes first, as before."""
    demand = demand_of(
        [device_class("whole", 'device.attributes["gpu.deckhouse.io"].deviceType == "Physical"'),
         device_class("small", mig("1g.10gb")), device_class("half", mig("3g.40gb"))]
    )  # fmt: skip
    policy = OfferPolicy(demand=demand)
    offers = card_offers(ready_card("w1", H100, "h100-80gb"), policy).offers
    assert offers[0].kind == "Physical"
    found = order("h100-80gb", policy)
    assert starts(found, "1g.10gb") == [6, 5, 4, 3, 2, 1, 0]
    assert starts(found, "3g.40gb") == [4, 0]


def test_a30_one_slice_instances_start_from_the_top():
    found = order("a30", OfferPolicy())
    assert starts(found, "1g.6gb") == [3, 2, 1, 0]
    assert starts(found, "2g.12gb") == [2, 0]
