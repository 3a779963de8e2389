# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MIG profile policy: its rules, which rule a node gets, and what a card then offers."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.mig_profile_policy import (
    MigProfileRule,
    PolicyError,
    for_node,
    parse_json,
    parse_rules,
    unknown_profiles,
)
from deckhouse_gpu.domain.offers.model import OfferPolicy
from testkit.gpu_objects import ready_card

H100 = "h100-sxm5-80gb"
A30 = "a30-pcie"


def test_rules_parse_with_an_optional_node_selector() -> None:
    rules = parse_rules(
        [
            {"device": H100, "nodeSelector": {"pool": "inference"}, "profiles": ["1g.10gb"]},
            {"device": H100, "profiles": ["7g.80gb", "3g.40gb"]},
        ]
    )
    assert rules == (
        MigProfileRule(H100, frozenset({"1g.10gb"}), (("pool", "inference"),)),
        MigProfileRule(H100, frozenset({"7g.80gb", "3g.40gb"})),
    )
    assert parse_json("") == ()
    assert parse_json('[{"device": "a30-pcie", "profiles": []}]') == (MigProfileRule(A30, frozenset()),)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"device": H100}, "expected a list"),
        (
            [{"device": H100, "profiles": ["1g.10GB"]}],
            "migProfiles[0].profiles: '1g.10GB' is not a MIG profile",
        ),
        ([{"device": "", "profiles": []}], "migProfiles[0].device"),
        ([{"device": H100, "profile": ["1g.10gb"]}], "unknown field 'profile'"),
        ([{"device": H100, "profiles": [], "nodeSelector": ["a"]}], "nodeSelector: expected a mapping"),
        (
            [
                {"device": H100, "profiles": []},
                {"device": A30, "profiles": []},
                {"device": H100, "profiles": []},
            ],
            "migProfiles[2]: repeats the device and nodeSelector of migProfiles[0]",
        ),
    ],
)
def test_malformed_rules_name_the_rule_and_field(raw: object, message: str) -> None:
    with pytest.raises(
        PolicyError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_rules(raw)


def test_a_bad_json_text_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="not valid JSON"):
        parse_json("[{")


def test_the_first_rule_a_node_matches_wins_per_device() -> None:
    rules = parse_rules(
        [
            {"device": H100, "nodeSelector": {"pool": "inference"}, "profiles": ["1g.10gb"]},
            {"device": H100, "profiles": ["7g.80gb"]},
            {"device": A30, "nodeSelector": {"pool": "training"}, "profiles": []},
        ]
    )
    assert for_node(rules, {"pool": "inference"}) == ((H100, frozenset({"1g.10gb"})),)
    assert for_node(rules, {}) == ((H100, frozenset({"7g.80gb"})),)
    assert for_node(rules, {"pool": "training"}) == (
        (A30, frozenset()),
        (H100, frozenset({"7g.80gb"})),
    )


def test_a_card_offers_only_the_chosen_profiles_and_drops_their_counters() -> None:
    card = ready_card("w1", "0000:17:00.0", "h100-80gb")
    policy = OfferPolicy(mig_profiles=((H100, frozenset({"3g.40gb", "7g.80gb"})),))
    offers = card_offers(card, policy)
    assert [o.name for o in offers.offers] == [
        "gpu-0000-17-00-0",
        "gpu-0000-17-00-0-mig-3g-40gb-4",  # packing order: the upper half first (placement_order.py)
        "gpu-0000-17-00-0-mig-3g-40gb-0",
        "gpu-0000-17-00-0-mig-7g-80gb-0",
    ]
    # No +me profile is offered, so nothing needs the OFA engine counter; the two 3g placements
    # cover all eight slices, which the whole card and 7g consume; every offer covers none or all
    # of each half, so each half counts as one (counter_layout.grouped).
    assert offers.counter_set is not None
    assert offers.counter_set.counters == {"memory-slices-0-3": "4", "memory-slices-4-7": "4"}
    assert offers.offers[-1].consumes == offers.offers[0].consumes == offers.counter_set.counters
    everything = card_offers(card, OfferPolicy())
    kept = {o.name for o in offers.offers}
    for full, chosen in zip((o for o in everything.offers if o.name in kept), offers.offers, strict=True):
        assert (full.attributes, full.capacity) == (chosen.attributes, chosen.capacity)


def test_no_profile_offered_is_a_whole_card_without_counters() -> None:
    card = ready_card("w1", "0000:17:00.0", "a30")
    offers = card_offers(card, OfferPolicy(mig_profiles=((A30, frozenset()),)))
    assert [o.kind for o in offers.offers] == ["Physical"]
    assert offers.counter_set is None
    assert offers.offers[0].consumes == {}


def test_other_devices_keep_every_profile() -> None:
    card = ready_card("w1", "0000:17:00.0", "a30")
    restricted = card_offers(card, OfferPolicy(mig_profiles=((H100, frozenset({"1g.10gb"})),)))
    assert restricted == card_offers(card, OfferPolicy())


def test_profiles_a_card_lacks_are_named() -> None:
    card = ready_card("w1", "0000:17:00.0", "a30")
    choice = ((A30, frozenset({"1g.6gb", "1g.10gb", "7g.80gb"})),)
    problem = unknown_profiles(card, choice)
    assert problem is not None
    assert problem.startswith("dra.migProfiles offers 1g.10gb, 7g.80gb for a30-pcie, which this node's ")
    assert "they have 1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb" in problem
    assert unknown_profiles(card, ((A30, frozenset({"1g.6gb"})),)) is None
    assert unknown_profiles(card, ((H100, frozenset({"1g.5gb"})),)) is None  # not this card's rule
    t4 = ready_card("w1", "0000:18:00.0", "t4")
    device = t4["metadata"]["labels"]["gpu.deckhouse.io/device"]
    assert "they have no MIG" in str(unknown_profiles(t4, ((device, frozenset({"1g.5gb"})),)))
    del t4["status"]["capabilities"]
    assert unknown_profiles(t4, ((device, frozenset({"1g.5gb"})),)) is None  # not described yet
