# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Events of a card's health and driver changes: only on a change, short, saying what to do."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.inventory.health import hardware_health as health
from deckhouse_gpu.domain.inventory.health.card_events import driver_event, health_event
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

ADDRESS = "0000:17:00.0"
LOST = health.Verdict(
    ConditionStatus.UNKNOWN, health.REASON_QUERY_FAILED, "nvmlDeviceGetUUID failed: GPU is lost"
)


def test_no_change_no_event():
    assert health_event("True", health.healthy(), "w1", ADDRESS) is None
    assert health_event("Unknown", LOST, "w1", ADDRESS) is None
    assert driver_event("nvidia", "nvidia", "w1", ADDRESS) is None


def test_a_lost_card_warns_and_says_how_to_recover_it():
    event = health_event("True", LOST, "w1", ADDRESS)
    assert event is not None
    assert (event.type, event.reason) == ("Warning", "HardwareHealthyUnknown")
    assert event.message.startswith("HardwareHealthy True -> Unknown (NVMLQueryFailed): nvmlDeviceGetUUID")
    # Offered on, tainted, so the scheduler, kubectl and the user see why (domain/offers/device_taints.py).
    assert "its devices are tainted gpu.deckhouse.io/unhealthy" in event.message
    assert "not offered" not in event.message
    assert "dmesg" in event.message
    assert f"nvidia-smi -r -i {ADDRESS}" in event.message
    assert len(event.message) < 400


def test_recovery_says_the_devices_are_offered_again():
    event = health_event("Unknown", health.healthy(), "w1", ADDRESS)
    assert event is not None
    assert (event.type, event.reason) == ("Normal", "HardwareHealthyTrue")
    assert event.message.endswith("its devices are offered again")
    first = health_event(None, health.healthy(), "w1", ADDRESS)
    assert first is not None
    assert first.message.startswith("HardwareHealthy unset -> True")
    assert first.message.endswith("its devices are offered")


@pytest.mark.parametrize(
    ("reason", "kind", "hint"),
    [
        (health.REASON_NVML_UNAVAILABLE, "Warning", "run nvidia-smi"),
        (health.REASON_DRIVER_NOT_READY, "Warning", "DriverReady condition says why"),
        (health.REASON_NOT_NVIDIA, "Normal", "given to virtual machines"),  # expected for passthrough
        (health.REASON_NO_ADDRESS, "Normal", "check gpu-node-agent on node w1"),
    ],
)
def test_each_reason_has_its_own_advice(reason, kind, hint):
    event = health_event("True", health.Verdict(ConditionStatus.UNKNOWN, reason, "m"), "w1", ADDRESS)
    assert event is not None
    assert event.type == kind
    assert hint in event.message
    assert "its devices are not offered" in event.message  # health unknown: withdrawn, not tainted
    assert len(event.message) < 400  # short: it is read in kubectl describe


def test_a_card_judged_unhealthy_is_said_to_be_tainted():
    verdict = health.Verdict(ConditionStatus.FALSE, "EccErrors", "uncorrectable ECC errors")
    event = health_event("True", verdict, "w1", ADDRESS)
    assert event is not None
    assert (event.type, event.reason) == ("Warning", "HardwareHealthyFalse")
    assert "its devices are tainted gpu.deckhouse.io/unhealthy" in event.message


@pytest.mark.parametrize(
    ("before", "after", "kind", "says"),
    [
        ("vfio-pci", "nvidia", "Normal", "offered to Pods once DriverReady and HardwareHealthy are True"),
        ("nvidia", "vfio-pci", "Normal", "passthrough to virtual machines"),
        ("nvidia", None, "Warning", f"lspci -k -s {ADDRESS} on node w1"),
        (None, "nouveau", "Warning", "unbind nouveau and bind nvidia"),
    ],
)
def test_a_driver_change_says_what_it_means(before, after, kind, says):
    event = driver_event(before, after, "w1", ADDRESS)
    assert event is not None
    assert (event.type, event.reason) == (kind, "PhysicalGPUDriverChanged")
    assert event.message.startswith(f"GPU {ADDRESS} is now bound to {after or 'no driver'}")
    assert says in event.message
