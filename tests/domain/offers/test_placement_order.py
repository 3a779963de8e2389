# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The packing order of a card's MIG placements (domain/offers/placement_order.py, DESIGN.md D19)."""

from __future__ import annotations

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.placement_order import Placement, packing_order
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
    # 2g at 4 would leave slices 6-7 of its half to the 1g profiles alone; at 2 and 0 two 2g
    # instances tile their half, so those come first.
    assert starts(found, "2g.20gb") == [2, 0, 4]
    assert starts(found, "3g.40gb") == [4, 0]
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


def synthetic(table: dict[str, list[tuple[int, int]]]) -> list[Placement]:
    """Placements of a made-up model, profile by profile: (start, size) each."""
    found = []
    for name, places in table.items():
        profile = {"name": name, "memoryMiB": 1000 * places[0][1]}  # one status entry per profile
        found += [Placement(profile, start, size) for start, size in places]
    return found


def ordered(placements: list[Placement], profile: str) -> list[int]:
    return [p.start for p in packing_order(placements) if p.profile["name"] == profile]


def test_a_placement_that_strands_slices_of_its_region_goes_last():
    """Six slices, b (2) at 0, 2, 4 and c (3) at 0 and 3: b at 0 or 4 leaves one slice of its
    c region to a alone; b at 2 lies in no c region, so it goes first, though it is under both
    c placements (the rule reads the placement data; nothing names a model)."""
    table = {"a": [(s, 1) for s in range(6)], "b": [(0, 2), (2, 2), (4, 2)], "c": [(0, 3), (3, 3)]}
    assert ordered(synthetic(table), "b") == [2, 4, 0]


def test_then_the_placement_under_the_fewest_larger_ones_goes_first():
    """Four slices, a (1) at 0-3, c (2) at 2 only: a goes to 1 and 0 first, leaving c's only
    placement free, though the higher start would come first otherwise."""
    table = {"a": [(s, 1) for s in range(4)], "c": [(2, 2)]}
    assert ordered(synthetic(table), "a") == [1, 0, 3, 2]
