# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Consumable capacity: shares of a card with their share IDs, policy defaults and rounding, and
counters of a shared device charged only for its first share (quirk b) (KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

import re

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import MIG_CLASSES, V135, share
from tests.support.allocation import World, claim_object, device, exactly, first_available, resource_slice


def shared_card(**policy: object) -> dict[str, object]:
    request_policy = policy or {"default": "100", "validRange": {"min": "1", "max": "100", "step": "1"}}
    return device(
        "card", multi=True, capacity={"sharePercent": {"value": "100", "requestPolicy": request_policy}}
    )


def test_shares_fill_a_card_and_each_gets_its_own_share_id() -> None:
    world = World([resource_slice("s", [shared_card()])])
    first = world.allocate(share("a", "50"))
    assert first.allocations is not None
    (result,) = first.allocations[0]["devices"]["results"]
    assert result["consumedCapacity"] == {"sharePercent": "50"}
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", result["shareID"]
    )
    world.commit(first)
    assert world.devices(share("b", "60")) is None  # 50 + 60 > 100, as on a real 1.35 scheduler
    assert world.devices(share("c", "40")) == [["card"]]
    assert world.devices(share("d", "11")) is None
    assert world.devices(share("e", "10")) == [["card"]]


def test_a_claim_without_a_capacity_request_takes_the_policy_default() -> None:
    world = World([resource_slice("s", [shared_card()])])
    outcome = world.allocate(share("whole", None))
    assert outcome.allocations is not None
    assert outcome.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"sharePercent": "100"}


@pytest.mark.parametrize(
    ("policy", "requested", "consumed"),
    [
        ({"validRange": {"min": "10", "max": "100", "step": "10"}}, "25", "30"),  # rounded up to a step
        ({"validRange": {"min": "10", "max": "100", "step": "10"}}, "5", "10"),  # raised to the minimum
        ({"validRange": {"min": "10"}}, "13", "13"),  # no step: as requested
        ({"validValues": ["25", "50", "100"]}, "30", "50"),  # the first valid value above
    ],
)
def test_request_policies_round_the_consumed_amount(
    policy: dict[str, object], requested: str, consumed: str
) -> None:
    world = World([resource_slice("s", [shared_card(**policy)])])
    outcome = world.allocate(share("c", requested))
    assert outcome.allocations is not None
    assert outcome.allocations[0]["devices"]["results"][0]["consumedCapacity"] == {"sharePercent": consumed}


@pytest.mark.parametrize(
    ("policy", "requested"),
    [
        ({"validRange": {"min": "10", "max": "50"}}, "60"),  # above the maximum
        ({"validValues": ["25", "50"]}, "60"),  # no valid value that large
    ],
)
def test_requests_the_policy_cannot_serve_do_not_fit(policy: dict[str, object], requested: str) -> None:
    world = World([resource_slice("s", [shared_card(**policy)])])
    assert world.devices(share("c", requested)) is None


def test_a_capacity_the_device_lacks_skips_it() -> None:
    world = World([resource_slice("s", [device("plain"), shared_card()])])
    asks = claim_object("c", exactly("gpu", capacity={"requests": {"memory": "1Gi"}}))
    assert world.devices(asks) is None


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_a_capacity_misfit_leaves_the_card_s_counters_to_the_next_subrequest(version: str) -> None:
    """The candidate loop judges capacity before allocateDevice charges counters, 1.34 too: the
    real 1.34.9 scheduler gave the second subrequest the card that the first one's capacity
    request (a capacity the card lacks) would otherwise have charged for the rest of the call."""
    card = device("card", consumes={"c0": {"memory": "24Gi"}})
    counters = {"c0": {"memory": "24Gi"}}
    slices = (  # 1.34 counts per slice, 1.35 per pool, where a slice holds counters or devices
        [resource_slice("s", [card], counters=counters)]
        if version == "1.34"
        else [
            resource_slice("counters", counters=counters, count=2),
            resource_slice("devices", [card], count=2),
        ]
    )
    shared = {"name": "shared", "deviceClassName": "gpu", "capacity": {"requests": {"sharePercent": "30"}}}
    asks = claim_object("c", first_available("r", shared, {"name": "whole", "deviceClassName": "gpu"}))
    world = World(slices, semantics=Semantics(version))
    outcome = world.allocate(asks)
    assert outcome.allocations is not None, outcome.error
    assert [r["request"] for r in outcome.allocations[0]["devices"]["results"]] == ["r/whole"]


def test_a_shared_device_counts_its_counters_only_for_the_first_share_unless_strict() -> None:
    # Observed on a real 1.35 scheduler (KUBERNETES-FACTS.md F9): a 50 % share of a device that
    # consumes a whole counter set does not keep a later claim off that set (quirk b).
    shared = device(
        "card-shared",
        multi=True,
        consumes={"c0": {"memory": "24Gi"}},
        capacity={
            "sharePercent": {
                "value": "100",
                "requestPolicy": {"default": "100", "validRange": {"min": "1", "max": "100"}},
            }
        },
    )
    mig = device("mig-0", kind="mig", consumes={"c0": {"memory": "6Gi"}})
    slices = [
        resource_slice("counters", counters={"c0": {"memory": "24Gi"}}, count=2),
        resource_slice("devices", [shared, mig], count=2),
    ]
    for semantics, expected in ((V135, [["mig-0"]]), (Semantics(strict=True), None)):
        world = World(slices, MIG_CLASSES, semantics)
        assert world.devices(share("half", "50")) == [["card-shared"]]
        assert world.devices(claim_object("m", exactly("m", "mig"))) == expected
