# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from deckhouse_gpu.domain.inventory.conditions import find, is_true, set_condition
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

T0, T1 = "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"


def test_adds_a_missing_condition_and_keeps_others_in_order():
    others = [
        {
            "type": "DriverReady",
            "status": "True",
            "reason": "ValidatorReady",
            "message": "",
            "lastTransitionTime": T0,
        }
    ]
    result = set_condition(others, "HardwareHealthy", ConditionStatus.TRUE, "NVMLHealthy", "ok", T1)
    assert [c["type"] for c in result] == ["DriverReady", "HardwareHealthy"]
    assert result[0] == others[0]
    assert result[1]["lastTransitionTime"] == T1


def test_transition_time_moves_only_when_the_status_changes():
    first = set_condition(None, "HardwareHealthy", ConditionStatus.TRUE, "NVMLHealthy", "ok", T0)
    same = set_condition(first, "HardwareHealthy", ConditionStatus.TRUE, "NVMLHealthy", "still ok", T1)
    assert same[0]["lastTransitionTime"] == T0
    assert same[0]["message"] == "still ok"
    flipped = set_condition(same, "HardwareHealthy", ConditionStatus.UNKNOWN, "NVMLQueryFailed", "lost", T1)
    assert flipped[0]["lastTransitionTime"] == T1
    assert not is_true(flipped, "HardwareHealthy")
    assert is_true(first, "HardwareHealthy")
    assert find(flipped, "DriverReady") is None


def test_input_is_not_mutated():
    original = [
        {"type": "HardwareHealthy", "status": "True", "reason": "a", "message": "", "lastTransitionTime": T0}
    ]
    set_condition(original, "HardwareHealthy", ConditionStatus.FALSE, "b", "", T1)
    assert original[0]["status"] == "True"
