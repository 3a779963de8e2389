# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.inventory.health import hardware_health as health
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

READY = [{"type": "DriverReady", "status": "True"}]


def status(driver="Nvidia", address="0000:17:00.0", conditions=READY):
    result = {"currentState": {"driverType": driver} if driver else {}, "conditions": conditions}
    if address:
        result["pciInfo"] = {"address": address}
    return result


@pytest.mark.parametrize(
    ("card", "reason"),
    [
        (status(address=None), "MissingPCIAddress"),
        (status(driver="VFIO"), "DriverTypeNotNvidia"),
        (status(driver=None), "DriverTypeNotNvidia"),
        (status(conditions=[]), "DriverNotReady"),
        (status(conditions=[{"type": "DriverReady", "status": "False"}]), "DriverNotReady"),
    ],
)
def test_gates(card, reason):
    verdict = health.gate(card)
    assert verdict is not None
    assert verdict.status is ConditionStatus.UNKNOWN
    assert verdict.reason == reason


def test_a_ready_nvidia_card_passes_the_gates():
    assert health.gate(status()) is None


def test_failures_inside_the_grace_keep_the_condition_then_turn_unknown():
    settings = health.HealthSettings(grace_seconds=30, backoff_seconds=(5, 10, 30))
    track, verdict, delay = health.on_failure(None, 100.0, "NVMLQueryFailed", "lost", settings)
    assert (verdict, delay, track.failures) == (None, 5, 1)
    track, verdict, delay = health.on_failure(track, 105.0, "NVMLQueryFailed", "lost", settings)
    assert (verdict, delay) == (None, 10)
    track, verdict, delay = health.on_failure(track, 115.0, "NVMLQueryFailed", "lost", settings)
    assert verdict is None
    assert delay == 15  # no later than the end of the grace
    track, verdict, delay = health.on_failure(track, 130.0, "NVMLQueryFailed", "lost", settings)
    assert verdict == health.Verdict(ConditionStatus.UNKNOWN, "NVMLQueryFailed", "lost")
    assert delay == 30
    _, _, delay = health.on_failure(track, 160.0, "NVMLQueryFailed", "lost", settings)
    assert delay == 30  # capped at the last step
    assert track.since == 100.0


def test_zero_grace_reports_at_once():
    _, verdict, _ = health.on_failure(
        None, 0.0, "NVMLUnavailable", "no library", health.HealthSettings(0, (1,))
    )
    assert verdict is not None
    assert verdict.reason == "NVMLUnavailable"


def test_settings_are_validated():
    with pytest.raises(ValueError, match="backoff"):
        health.HealthSettings(30, ())
    with pytest.raises(ValueError, match="grace"):
        health.HealthSettings(-1, (5,))
