# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from typing import Any

from deckhouse_gpu.domain.inventory.handler_status import (
    HandlerUpdate,
    health_changed,
    status_patch,
)
from deckhouse_gpu.domain.inventory.health.hardware_health import Verdict, healthy
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import apply_patch

NOW = "2026-11-21T12:00:00Z"
STORED: dict[str, Any] = {
    "pciInfo": {"address": "0000:17:00.0"},
    "currentState": {"driverType": "Nvidia", "nvidia": {"gpuUUID": "GPU-1", "driverVersion": "570"}},
    "capabilities": {"productName": "NVIDIA A30", "nvidia": {"computeTypes": ["FP32"], "migSupported": True}},
    "conditions": [
        {
            "type": "DriverReady",
            "status": "True",
            "reason": "ValidatorReady",
            "message": "",
            "lastTransitionTime": NOW,
        }
    ],
}


def test_only_handler_fields_are_patched_and_others_survive():
    update = HandlerUpdate(
        healthy(),
        {"productName": "NVIDIA A30", "nvidia": {"computeTypes": ["FP32", "FP64"]}},
        {"gpuUUID": "GPU-1", "driverVersion": "580"},
    )
    patch = status_patch(STORED, update, NOW)
    assert set(patch) == {"capabilities", "currentState", "conditions"}
    result = apply_patch(STORED, patch)
    assert result["pciInfo"] == STORED["pciInfo"]
    assert result["currentState"]["driverType"] == "Nvidia"
    assert result["currentState"]["nvidia"] == {"gpuUUID": "GPU-1", "driverVersion": "580"}
    assert result["capabilities"] == update.capabilities  # replaced whole: migSupported is gone
    assert [c["type"] for c in result["conditions"]] == ["DriverReady", "HardwareHealthy"]
    assert health_changed(STORED, patch) == (None, "True")


def test_nothing_to_write_gives_an_empty_patch():
    update = HandlerUpdate(healthy(), STORED["capabilities"], STORED["currentState"]["nvidia"])
    stored = apply_patch(STORED, status_patch(STORED, update, NOW))
    assert status_patch(stored, update, "2026-11-21T13:00:00Z") == {}


def test_clearing_nvidia_state_keeps_capabilities():
    gate = Verdict(ConditionStatus.UNKNOWN, "DriverTypeNotNvidia", "bound to vfio-pci")
    patch = status_patch(STORED, HandlerUpdate(verdict=gate, clear_nvidia=True), NOW)
    result = apply_patch(STORED, patch)
    assert "nvidia" not in result["currentState"]
    assert result["currentState"]["driverType"] == "Nvidia"
    assert result["capabilities"] == STORED["capabilities"]


def test_inside_the_grace_nothing_is_written():
    assert status_patch(STORED, HandlerUpdate(), NOW) == {}
