# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler would write into given PhysicalGPUs, computed offline (``snapshot --dry-run``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.handler_status import HandlerUpdate, status_patch
from deckhouse_gpu.domain.inventory.health.hardware_health import Verdict
from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY, ConditionStatus
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import apply_patch
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.services.publishing.capabilities import assess, driver_info


@dataclass(frozen=True)
class Preview:
    objects: list[dict[str, Any]]
    problems: list[str]  # one line per card NVML failed on


def preview(objects: list[dict[str, Any]], nvml: NVML, now: str, assume_driver_ready: bool) -> Preview:
    """Each object with the handler's fields as they would be written; failures are reported
    at once (a one-shot preview has no grace period to wait through)."""
    driver, driver_error = driver_info(nvml)
    updated: list[dict[str, Any]] = []
    problems: list[str] = []
    for original in objects:
        obj = copy.deepcopy(original)
        status = obj.setdefault("status", {})
        if assume_driver_ready and not conditions.is_true(status.get("conditions"), DRIVER_READY):
            status["conditions"] = conditions.set_condition(
                status.get("conditions"),
                DRIVER_READY,
                ConditionStatus.TRUE,
                "AssumedForDryRun",
                "--assume-driver-ready",
                now,
            )
        result = assess(status, driver, driver_error, nvml)
        update = result.update
        if result.failure is not None:
            reason, message = result.failure
            problems.append(f"{obj.get('metadata', {}).get('name')}: {reason}: {message}")
            update = HandlerUpdate(verdict=Verdict(ConditionStatus.UNKNOWN, reason, message))
        obj["status"] = apply_patch(status, status_patch(status, update, now))
        updated.append(obj)
    return Preview(updated, problems)
