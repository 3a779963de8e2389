# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Condition lists (metav1.Condition shape) that several writers share without losing updates.

Each writer replaces only the condition types it owns; the list stays keyed by ``type``, and
``lastTransitionTime`` moves only when the status changes, as Kubernetes conventions require.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

Condition = dict[str, Any]


def find(conditions: Sequence[Condition] | None, kind: str) -> Condition | None:
    for condition in conditions or ():
        if condition.get("type") == kind:
            return condition
    return None


def is_true(conditions: Sequence[Condition] | None, kind: str) -> bool:
    condition = find(conditions, kind)
    return condition is not None and condition.get("status") == ConditionStatus.TRUE.value


def set_condition(
    conditions: Sequence[Condition] | None,
    kind: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[Condition]:
    """A new list with ``kind`` set; other types are kept untouched and in their order."""
    previous = find(conditions, kind)
    changed = previous is None or previous.get("status") != status.value
    transition = (
        now
        if changed or not previous or not previous.get("lastTransitionTime")
        else previous["lastTransitionTime"]
    )
    updated: Condition = {
        "type": kind,
        "status": status.value,
        "reason": reason,
        "message": message[:32768],
        "lastTransitionTime": transition,
    }
    if observed_generation is not None:
        updated["observedGeneration"] = observed_generation
    result = [dict(c) if c.get("type") != kind else updated for c in conditions or ()]
    if previous is None:
        result.append(updated)
    return result
