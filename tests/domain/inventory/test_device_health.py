# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node's device health for the kubelet: which names, which health, which message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.health.device_health import (
    MAX_MESSAGE,
    DeviceHealth,
    card_health,
    device_names,
    health_lines,
    node_health,
)
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from testkit.gpu_objects import ready_card

A30, T4, H100 = "0000:17:00.0", "0000:b1:00.0", "0000:3a:00.0"
LOST = "0000:17:00.0: nvmlDeviceGetHandleByPciBusId failed: GPU is lost"


def with_health(card: dict[str, Any], status: str, reason: str, message: str) -> dict[str, Any]:
    changed = copy.deepcopy(card)
    for condition in changed["status"]["conditions"]:
        if condition["type"] == "HardwareHealthy":
            condition.update(status=status, reason=reason, message=message)
    return changed


@pytest.mark.parametrize(
    "policy",
    [OfferPolicy(), OfferPolicy(sharing=True), OfferPolicy(mig=False), OfferPolicy(partitionable=False)],
    ids=["default", "sharing", "no-mig", "no-counters"],
)
@pytest.mark.parametrize(("address", "model"), [(A30, "a30"), (T4, "t4"), (H100, "h100-80gb")])
def test_every_published_name_has_a_health(policy, address, model):
    card = ready_card("w1", address, model)
    published = {offer.name for offer in card_offers(card, policy).offers}
    assert published <= set(device_names(card))


def test_a_mig_card_lists_its_physical_offer_and_every_placement():
    names = device_names(ready_card("w1", A30, "a30"))
    assert names[0] == "gpu-0000-17-00-0"
    assert "gpu-0000-17-00-0-mig-1g-6gb-3" in names
    assert "gpu-0000-17-00-0-mig-4g-24gb-0" in names
    # 1g.6gb x4, 1g.6gb+me x4, 2g.12gb x2, 2g.12gb+me x2, 4g.24gb x1, and the whole card
    assert len(names) == len(set(names)) == 1 + 4 + 4 + 2 + 2 + 1
    assert device_names(ready_card("w1", T4, "t4")) == ("gpu-0000-b1-00-0",)


def test_no_address_no_devices():
    card = ready_card("w1", A30, "a30")
    del card["status"]["pciInfo"]["address"]
    assert device_names(card) == ()
    assert node_health([card], {}) == ((), {})


@pytest.mark.parametrize(
    ("status", "reason", "message", "health", "said"),
    [
        ("True", "NVMLHealthy", "NVML snapshot succeeded", "Healthy", ""),
        (
            "Unknown",
            "NVMLQueryFailed",
            LOST,
            "Unhealthy",
            f"HardwareHealthy=Unknown (NVMLQueryFailed): {LOST}",
        ),
        (
            "False",
            "SomethingNew",
            "broken",
            "Unhealthy",
            f"card {A30}: HardwareHealthy=False (SomethingNew): broken",
        ),
        (
            "Unknown",
            "NVMLUnavailable",
            "nvmlInit failed: Driver Not Loaded",
            "Unknown",
            f"card {A30}: HardwareHealthy=Unknown (NVMLUnavailable): nvmlInit failed: Driver Not Loaded",
        ),
        (
            "Unknown",
            "DriverNotReady",
            "waiting for DriverReady=True",
            "Unknown",
            f"card {A30}: HardwareHealthy=Unknown (DriverNotReady): waiting for DriverReady=True",
        ),
    ],
)
def test_the_condition_decides_the_health_and_the_message(status, reason, message, health, said):
    card = with_health(ready_card("w1", A30, "a30"), status, reason, message)
    assert card_health(card) == (health, said)


def test_a_card_not_checked_yet_is_unknown():
    card = ready_card("w1", A30, "a30")
    card["status"]["conditions"] = [c for c in card["status"]["conditions"] if c["type"] != "HardwareHealthy"]
    assert card_health(card) == ("Unknown", f"card {A30}: gpu-handler has not checked it yet")


def test_a_long_message_is_cut_as_the_kubelet_cuts_it():
    card = with_health(ready_card("w1", A30, "a30"), "Unknown", "NVMLQueryFailed", f"{A30}: " + "x" * 2000)
    _, message = card_health(card)
    assert len(message) == MAX_MESSAGE
    assert message.endswith("xxx...")


def test_every_device_of_a_card_follows_it_and_the_others_stay():
    a30, t4 = ready_card("w1", A30, "a30"), ready_card("w1", T4, "t4")
    broken = with_health(a30, "Unknown", "NVMLQueryFailed", LOST)
    devices, known = node_health([broken, t4], {})
    assert [d.device for d in devices] == sorted(d.device for d in devices)
    assert {d.health for d in devices if d.card == A30} == {"Unhealthy"}
    assert {d.message for d in devices if d.card == A30} == {
        f"HardwareHealthy=Unknown (NVMLQueryFailed): {LOST}"
    }
    assert [d for d in devices if d.card == T4] == [DeviceHealth("gpu-0000-b1-00-0", T4, "Healthy")]
    assert known == {A30: device_names(a30), T4: ("gpu-0000-b1-00-0",)}


def test_a_card_that_is_gone_keeps_its_names_unhealthy():
    a30, t4 = ready_card("w1", A30, "a30"), ready_card("w1", T4, "t4")
    _, known = node_health([a30, t4], {})
    devices, remembered = node_health([t4], known)
    gone = [d for d in devices if d.card == A30]
    assert [d.device for d in gone] == list(device_names(a30))
    assert {(d.health, d.message) for d in gone} == {
        ("Unhealthy", f"card {A30} is no longer on the node: its PhysicalGPU is gone")
    }
    assert remembered == known
    back, _ = node_health([a30, t4], remembered)  # the card comes back: healthy again
    assert {d.health for d in back} == {"Healthy"}


def test_lines_for_people_say_each_card_once():
    a30, t4 = ready_card("w1", A30, "a30"), ready_card("w1", T4, "t4")
    devices, _ = node_health([with_health(a30, "Unknown", "NVMLQueryFailed", LOST), t4], {})
    assert health_lines(devices) == [
        f"gpu-0000-17-00-0 and 13 MIG devices: Unhealthy: HardwareHealthy=Unknown (NVMLQueryFailed): {LOST}",
        "gpu-0000-b1-00-0: Healthy",
    ]
    only_mig = [d for d in devices if d.device != "gpu-0000-17-00-0"][:1]
    assert health_lines(only_mig)[0].startswith(f"1 MIG device of card {A30}: Unhealthy")
