# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The last line of the MIG/Physical invariant (DESIGN.md D2 c): prepare refuses a claim
that conflicts with what is already prepared on a card, whatever the scheduler decided."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan


def _overlaps(a: DevicePlan, b: DevicePlan) -> bool:
    if a.placement_start is None or b.placement_start is None:
        return False
    a_end = a.placement_start + (a.placement_size or 0)
    b_end = b.placement_start + (b.placement_size or 0)
    return a.placement_start < b_end and b.placement_start < a_end


def _conflict(new: DevicePlan, old: DevicePlan, owner: ClaimEntry) -> str | None:
    who = f"claim {owner.namespace}/{owner.name} ({owner.uid})"
    if new.kind == "Physical" and old.kind == "MIG":
        return f"card {new.card} has MIG instances prepared for {who}; the whole card cannot be prepared too"
    if new.kind == "MIG" and old.kind == "Physical":
        return f"card {new.card} is prepared whole for {who}; MIG instances cannot be created on it"
    if new.kind == "Physical" and old.kind == "Physical" and not (new.share_id and old.share_id):
        return f"card {new.card} is already prepared exclusively for {who}"
    if new.kind == "MIG" and old.kind == "MIG" and _overlaps(new, old):
        return f"MIG placement of {new.device} overlaps {old.device} prepared for {who} on card {new.card}"
    return None


def conflicts(uid: str, plans: Iterable[DevicePlan], prepared: Iterable[ClaimEntry]) -> list[str]:
    """Why the plans cannot be prepared beside the other claims' devices; empty when they can."""
    others = [entry for entry in prepared if entry.uid != uid]
    found = []
    for plan in plans:
        for entry in others:
            for old in entry.devices:
                if old.card == plan.card and (reason := _conflict(plan, old, entry)):
                    found.append(reason)
    return found


def held_by_other(plans: Iterable[DevicePlan], held: Mapping[str, str]) -> str | None:
    """Why the claim cannot be prepared: a device of it is on a card another owner holds (a
    device plugin, the GPU operator, processes outside DRA; DESIGN.md D16); None when none is."""
    for plan in plans:
        if plan.card in held:
            return (
                f"card {plan.card} of device {plan.device} is held by another owner: {held[plan.card]}; "
                "the module prepares nothing on it while it is"
            )
    return None
