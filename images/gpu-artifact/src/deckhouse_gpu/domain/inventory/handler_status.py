# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The merge patch of gpu-handler's own status fields (DESIGN.md D8).

gpu-handler owns ``capabilities``, ``currentState.nvidia`` and the ``HardwareHealthy``
condition. The patch is computed against the object as just read and sent with its
resourceVersion, so the agent's and the controller's fields and conditions are never lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.health.hardware_health import Verdict
from deckhouse_gpu.domain.inventory.physicalgpu import HARDWARE_HEALTHY
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import create_patch


@dataclass(frozen=True)
class HandlerUpdate:
    verdict: Verdict | None = None  # None keeps HardwareHealthy as it is (inside the grace period)
    capabilities: dict[str, Any] | None = None  # None keeps the last known capabilities
    nvidia: dict[str, Any] | None = None  # None keeps currentState.nvidia ...
    clear_nvidia: bool = False  # ... unless the card's current state is no longer known


def _replace(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    return create_patch(old, new) if isinstance(old, dict) else new


def status_patch(stored: dict[str, Any] | None, update: HandlerUpdate, now: str) -> dict[str, Any]:
    """The status merge patch; empty when the stored object already says all of it."""
    stored = stored or {}
    patch: dict[str, Any] = {}
    if update.capabilities is not None and stored.get("capabilities") != update.capabilities:
        patch["capabilities"] = _replace(stored.get("capabilities"), update.capabilities)
    old_nvidia = (stored.get("currentState") or {}).get("nvidia")
    if update.clear_nvidia and old_nvidia is not None:
        patch["currentState"] = {"nvidia": None}
    elif update.nvidia is not None and old_nvidia != update.nvidia:
        patch["currentState"] = {"nvidia": _replace(old_nvidia, update.nvidia)}
    if update.verdict is not None:
        verdict = update.verdict
        current = stored.get("conditions") or []
        updated = conditions.set_condition(
            current, HARDWARE_HEALTHY, verdict.status, verdict.reason, verdict.message, now
        )
        if updated != current:
            patch["conditions"] = updated
    return patch


def health_changed(stored: dict[str, Any] | None, patch: dict[str, Any]) -> tuple[str | None, str | None]:
    """HardwareHealthy status before and after the patch (for events)."""
    before = conditions.find((stored or {}).get("conditions"), HARDWARE_HEALTHY)
    after = conditions.find(patch.get("conditions"), HARDWARE_HEALTHY) if "conditions" in patch else before
    return (before or {}).get("status"), (after or {}).get("status")
