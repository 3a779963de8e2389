# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Did the API server keep what was sent? Fields of a disabled DRA feature gate vanish silently."""

from __future__ import annotations

from typing import Any

PARTITIONABLE = "DRAPartitionableDevices"
CONSUMABLE = "DRAConsumableCapacity"
DEVICE_TAINTS = "DRADeviceTaints"
# What a node does without each feature, for the Event that says it gave the feature up.
WITHOUT = {
    PARTITIONABLE: "publishes no MIG offers and shared counters, only exclusive cards",
    CONSUMABLE: "publishes no shared (time-slicing/MPS) offers, only exclusive cards",
    DEVICE_TAINTS: "withdraws the offers of an unhealthy card instead of tainting them "
    "gpu.deckhouse.io/unhealthy",
}


def _uses(spec: dict[str, Any]) -> set[str]:
    used = set()
    if spec.get("sharedCounters"):
        used.add(PARTITIONABLE)
    for device in spec.get("devices") or []:
        if device.get("consumesCounters"):
            used.add(PARTITIONABLE)
        if device.get("allowMultipleAllocations") or any(
            "requestPolicy" in entry for entry in (device.get("capacity") or {}).values()
        ):
            used.add(CONSUMABLE)
        if device.get("taints"):
            used.add(DEVICE_TAINTS)
    return used


def dropped_features(sent: dict[str, Any], stored: dict[str, Any]) -> set[str]:
    """The features whose fields were in ``sent`` but are missing from ``stored``."""
    sent_spec, stored_spec = sent.get("spec") or {}, stored.get("spec") or {}
    return _uses(sent_spec) - _uses(stored_spec)
