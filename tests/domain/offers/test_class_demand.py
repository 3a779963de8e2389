# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers follow the DeviceClasses (DESIGN.md D19): only what some class may select is offered,
errors count as "may select", and the counters of what stays are exactly right."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers, counter_set
from deckhouse_gpu.domain.offers.class_demand import ClassDemand, demand_of, selectors_only
from deckhouse_gpu.domain.offers.model import OfferPolicy
from testkit.gpu_objects import ready_card
from tests.domain.offers.test_counter_equivalence import ADDRESS, Driver, Layout, search

H100 = "0000:17:00.0"
OURS = 'device.driver == "gpu.deckhouse.io"'
WHOLE = f'{OURS} && device.attributes["gpu.deckhouse.io"].deviceType == "Physical"'


def mig(profile: str) -> str:
    attributes = 'device.attributes["gpu.deckhouse.io"]'
    return f'{OURS} && {attributes}.deviceType == "MIG" && {attributes}.migProfile == "{profile}"'


def device_class(name: str, *expressions: str) -> dict[str, Any]:
    selectors = [{"cel": {"expression": e}} for e in expressions]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": selectors}}  # fmt: skip


TYPICAL = demand_of(
    [
        device_class("whole", WHOLE),
        device_class("small", mig("1g.10gb")),
        device_class("half", mig("3g.40gb")),
    ]
)


def offered(demand: ClassDemand | None, model: str = "h100-80gb") -> list[tuple[str, object]]:
    offers = card_offers(ready_card("w1", H100, model), OfferPolicy(demand=demand)).offers
    return [
        (str(o.attributes.get("migProfile", o.kind)), o.attributes.get("migPlacementStart")) for o in offers
    ]


def test_a_typical_class_set_offers_only_whole_cards_and_its_two_profiles():
    got = offered(TYPICAL)
    assert got[0] == ("Physical", None)
    assert sorted(p for p, _ in got[1:]) == ["1g.10gb"] * 7 + ["3g.40gb"] * 2
    assert len(offered(None)) > 20  # unknown classes: everything, as before


def test_the_counters_of_what_stays_are_those_of_the_same_profiles_chosen_by_hand():
    card = ready_card("w1", H100, "h100-80gb")
    by_hand = OfferPolicy(mig_profiles=(("h100-sxm5-80gb", frozenset({"1g.10gb", "3g.40gb"})),))
    followed = card_offers(card, OfferPolicy(demand=TYPICAL))
    assert followed.counter_set == counter_set(card, by_hand)
    assert {o.name: o.consumes for o in followed.offers} == {
        o.name: o.consumes for o in card_offers(card, by_hand).offers
    }


def test_a_class_that_selects_some_placements_keeps_the_counters_exact():
    """A selector on the placement (not only the profile): the published counters still admit
    exactly the sets of the filtered offers that the full counters and the driver admit."""
    demand = demand_of(
        [device_class("upper", f'{OURS} && device.attributes["gpu.deckhouse.io"].migPlacementStart >= 3')]
    )
    card = ready_card("proof", ADDRESS, "a30")
    full = card_offers(card, OfferPolicy(counters="full", demand=demand))
    now = card_offers(card, OfferPolicy(demand=demand))
    assert [o.name for o in full.offers] == [o.name for o in now.offers]
    # The whole card has no migPlacementStart: the selector errs on it, which counts as "may select".
    assert now.offers[0].kind == "Physical"
    assert all(int(o.attributes["migPlacementStart"]) >= 3 for o in now.offers[1:])
    assert len(now.offers) < len(card_offers(card, OfferPolicy()).offers)
    assert search(now.offers, Layout.of(full), Layout.of(now), Driver("a30")) > len(now.offers)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["gpu.deckhouse.io"].noSuchAttribute == 1',  # an evaluation error
        "device.driver ==",  # does not compile
        'device.attributes["gpu.deckhouse.io"].migProfile',  # not a bool
    ],
)
def test_a_selector_that_errs_may_select(expression: str):
    assert len(offered(demand_of([device_class("odd", expression)]))) == len(offered(None))


def test_no_class_offers_nothing_and_a_class_without_selectors_everything():
    assert offered(demand_of([])) == []
    assert offered(demand_of([device_class("other", 'device.driver == "other.example.com"')])) == []
    broad = demand_of([device_class("any")])
    assert len(offered(broad)) == len(offered(None))
    assert broad.broad() == ["any"]


def test_only_a_whole_card_class_publishes_no_counters():
    offers = card_offers(
        ready_card("w1", H100, "h100-80gb"), OfferPolicy(demand=demand_of([device_class("w", WHOLE)]))
    )
    assert offers.counter_set is None
    assert [o.kind for o in offers.offers] == ["Physical"]
    assert offers.offers[0].consumes == {}


def test_the_cache_keeps_only_selectors():
    stored = device_class("whole", WHOLE)
    stored["metadata"]["resourceVersion"] = "7"
    stored["spec"]["config"] = [{"opaque": {"driver": "gpu.deckhouse.io", "parameters": {}}}]
    assert selectors_only(stored) == {
        "metadata": {"name": "whole"},
        "spec": {"selectors": stored["spec"]["selectors"]},
    }
