# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Health as device taints: which card is tainted how, its offers kept, the slices still valid."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.device_taints import (
    card_offers_with_health,
    describe,
    health_taint,
    keep_time_added,
)
from deckhouse_gpu.domain.offers.dropped_fields import DEVICE_TAINTS, dropped_features
from deckhouse_gpu.domain.offers.model import CardOffers, DeviceTaint, Offer, OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import layout, render
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from testkit.gpu_objects import ready_card

ADDRESS = "0000:17:00.0"
KEY = "gpu.deckhouse.io/unhealthy"
LOST = f"{ADDRESS}: nvmlDeviceGetMemoryInfo failed: GPU is lost (NVML return code 15)"


def card_with_health(status: str, reason: str, message: str = "", model: str = "a30") -> dict[str, Any]:
    card = ready_card("w1", ADDRESS, model)
    (health,) = [c for c in card["status"]["conditions"] if c["type"] == "HardwareHealthy"]
    health.update(status=status, reason=reason, message=message)
    return card


@pytest.mark.parametrize(
    ("status", "reason", "message", "expected"),
    [
        ("True", "NVMLHealthy", "", None),
        ("Unknown", "NVMLQueryFailed", LOST, ("GPULost", "NoExecute")),
        ("Unknown", "NVMLQueryFailed", "NVML does not see the card: gone", ("GPULost", "NoExecute")),
        (
            "Unknown",
            "NVMLQueryFailed",
            "x failed: GPU requires restart (NVML return code 16)",
            ("GPUResetRequired", "NoExecute"),
        ),
        (
            "Unknown",
            "NVMLQueryFailed",
            "x failed: Unknown Error (NVML return code 999)",
            ("NVMLQueryFailed", "NoSchedule"),
        ),
        ("False", "EccErrors", "uncorrectable ECC errors", ("EccErrors", "NoSchedule")),
        ("False", "", "", ("Unhealthy", "NoSchedule")),
        ("False", "odd reason: " + "x" * 80, "", None),  # checked below: made a label value
        # Fatal Xid errors (domain/inventory/health/xid.py): evicting when the card is lost or needs a
        # reset now, NoSchedule when it may finish its work first.
        ("False", "XidError", "Xid 79 (GPU has fallen off the bus): ...", ("GPULost", "NoExecute")),
        ("False", "XidError", "Xid 48 (double-bit ECC error): ...", ("GPUResetRequired", "NoExecute")),
        (
            "False",
            "XidError",
            "Xid 119 (GSP RPC timeout) (also Xid 63): ...",
            ("GPUResetRequired", "NoExecute"),
        ),
        (
            "False",
            "XidError",
            "Xid 63 (ECC page retirement or row remapping event): ...",
            ("XidError", "NoSchedule"),
        ),
        ("False", "XidError", "something else: GPU is lost", ("XidError", "NoSchedule")),  # no number
        # The card's state cannot be read: not judged unhealthy, so not tainted (and not offered).
        ("Unknown", "NVMLUnavailable", "libnvidia-ml.so.1 was not found", None),
        ("Unknown", "DriverNotReady", "waiting for DriverReady=True", None),
    ],
)
def test_the_taint_follows_the_health_condition(status, reason, message, expected):
    taint = health_taint(card_with_health(status, reason, message))
    if reason.startswith("odd"):
        assert taint is not None
        assert taint.effect == "NoSchedule"
        assert len(taint.value) <= 63
        assert taint.value.startswith("odd-reason")
        assert validate_pool(_pool([_offers(card_with_health(status, reason))]), 35) == []
        return
    assert (None if taint is None else (taint.value, taint.effect)) == expected
    if taint is not None:
        assert taint.key == KEY


def test_a_card_never_judged_is_not_tainted():
    card = ready_card("w1", ADDRESS, "a30")
    card["status"]["conditions"] = [c for c in card["status"]["conditions"] if c["type"] != "HardwareHealthy"]
    assert health_taint(card) is None


def _offers(card: dict[str, Any], policy: OfferPolicy | None = None, taints: bool = True) -> CardOffers:
    found = card_offers_with_health(card, policy or OfferPolicy(), None, taints)
    assert found is not None
    return found


def _pool(offers: list[CardOffers], minor: int = 35) -> list[dict[str, Any]]:
    return render("w1", offers, minor, 1, None)


@pytest.mark.parametrize("policy", [OfferPolicy(), OfferPolicy(sharing=True), OfferPolicy(mig=False)])
def test_an_unhealthy_card_keeps_every_offer_each_tainted(policy):
    healthy = card_offers(ready_card("w1", ADDRESS, "a30"), policy)
    lost = _offers(card_with_health("Unknown", "NVMLQueryFailed", LOST), policy)
    assert [o.name for o in lost.offers] == [o.name for o in healthy.offers]
    assert lost.counter_set == healthy.counter_set
    assert all(o.taints == (DeviceTaint(KEY, "GPULost", "NoExecute"),) for o in lost.offers)
    assert [o.__class__(**{**o.__dict__, "taints": ()}) for o in lost.offers] == healthy.offers


def test_without_taints_an_unhealthy_card_offers_nothing_as_before():
    card = card_with_health("Unknown", "NVMLQueryFailed", LOST)
    assert card_offers_with_health(card, OfferPolicy(), None, False) is None


def test_an_unhealthy_card_that_is_not_fully_described_is_not_offered_even_tainted():
    card = card_with_health("Unknown", "NVMLQueryFailed", LOST)
    card["status"]["conditions"][0]["status"] = "False"  # DriverReady
    assert card_offers_with_health(card, OfferPolicy(), None, True) is None
    card = card_with_health("Unknown", "NVMLQueryFailed", LOST)
    del card["status"]["currentState"]["nvidia"]["gpuUUID"]
    assert card_offers_with_health(card, OfferPolicy(), None, True) is None


def test_a_healthy_card_is_offered_untainted_either_way():
    card = ready_card("w1", ADDRESS, "a30")
    assert not any(o.taints for o in _offers(card).offers)
    assert _offers(card, taints=False) == _offers(card)


@pytest.mark.parametrize("minor", [34, 35, 37])
@pytest.mark.parametrize("model", ["a30", "h100-80gb", "t4"])
@pytest.mark.parametrize("sharing", [False, True])
def test_tainted_pools_are_valid_and_the_server_sets_the_time(minor, model, sharing):
    cards = [
        card_with_health("Unknown", "NVMLQueryFailed", LOST, model),
        ready_card("w1", "0000:31:00.0", model),
    ]
    slices = _pool([_offers(card, OfferPolicy(sharing=sharing)) for card in cards], minor)
    assert validate_pool(slices, minor) == []
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    tainted = [d for d in devices if d["name"].startswith("gpu-0000-17-00-0")]
    assert tainted
    assert all(d["taints"] == [{"key": KEY, "value": "GPULost", "effect": "NoExecute"}] for d in tainted)
    assert not any("taints" in d for d in devices if d not in tainted)


def _plain(count: int, tainted: set[int]) -> list[CardOffers]:
    """Cards with one offer each that consumes no counters (no MIG, or a T4)."""
    found = []
    for index in range(count):
        address = f"0000:{index + 1:02x}:00.0"
        taints = (DeviceTaint(KEY, "GPULost", "NoExecute"),) if index in tainted else ()
        name = f"gpu-0000-{index + 1:02x}-00-0"
        found.append(CardOffers(address, None, [Offer(name, address, "Physical", {}, {}, taints=taints)]))
    return found


def test_a_slice_with_a_tainted_device_holds_at_most_64_devices():
    assert [len(c.devices) for c in layout("w1", _plain(100, set()), 35)] == [100]
    # Cards stay whole per slice while they fit; only a slice holding a tainted device is capped.
    contents = layout("w1", _plain(100, {70}), 35)
    assert [len(c.devices) for c in contents] == [70, 30]
    assert [any(o.taints for o in c.devices) for c in contents] == [False, True]
    contents = layout("w1", _plain(100, {0}), 35)
    assert [len(c.devices) for c in contents] == [64, 36]
    assert validate_pool(_pool(_plain(100, {70})), 35) == []
    assert validate_pool(_pool(_plain(100, {0})), 35) == []


def test_keep_time_added_carries_the_stored_time_of_the_same_taint_only():
    taint = {"key": KEY, "value": "GPULost", "effect": "NoExecute"}
    stored = [
        {"spec": {"devices": [{"name": "a", "taints": [{**taint, "timeAdded": "2026-11-21T12:00:00Z"}]}]}}
    ]
    desired: list[dict[str, Any]] = [
        {"spec": {"devices": [
            {"name": "a", "taints": [dict(taint), {**taint, "value": "NVMLQueryFailed"}]},
            {"name": "b", "taints": [dict(taint)]},
            {"name": "c"},
        ]}},
        {"spec": {"sharedCounters": []}},
    ]  # fmt: skip
    before = copy.deepcopy(desired)
    keep_time_added(desired, stored)
    a, b, _ = desired[0]["spec"]["devices"]
    assert a["taints"][0]["timeAdded"] == "2026-11-21T12:00:00Z"
    assert "timeAdded" not in a["taints"][1]  # another value: a new taint, the server stamps it
    assert "timeAdded" not in b["taints"][0]  # another device
    assert desired[1] == before[1]
    given: list[dict[str, Any]] = [
        {"spec": {"devices": [{"name": "a", "taints": [{**taint, "timeAdded": "2026-01-01T00:00:00Z"}]}]}}
    ]
    keep_time_added(given, stored)
    assert given[0]["spec"]["devices"][0]["taints"][0]["timeAdded"] == "2026-01-01T00:00:00Z"


def test_taints_the_server_dropped_are_noticed():
    sent = {"spec": {"devices": [{"name": "a", "taints": [{"key": KEY, "effect": "NoSchedule"}]}]}}
    assert dropped_features(sent, {"spec": {"devices": [{"name": "a"}]}}) == {DEVICE_TAINTS}
    assert dropped_features(sent, sent) == set()
    assert (
        dropped_features({"spec": {"devices": [{"name": "a"}]}}, {"spec": {"devices": [{"name": "a"}]}})
        == set()
    )


def test_describe_writes_taints_as_kubectl_does():
    assert describe(DeviceTaint(KEY, "GPULost", "NoExecute")) == f"{KEY}=GPULost:NoExecute"
    assert describe(DeviceTaint(KEY, "", "NoSchedule")) == f"{KEY}:NoSchedule"
