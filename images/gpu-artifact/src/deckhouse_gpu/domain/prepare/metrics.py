# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler's prepare metrics count: a claim's offer type and why a call failed.

Every label value comes from a short fixed list, so a node exports a bounded number of series
whatever its claims are called: no claim names or UIDs, no error texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint
from deckhouse_gpu.domain.prepare.plan import DevicePlan

PHYSICAL, MIG, SHARED, VFIO = "Physical", "MIG", "Shared", "VFIO"
MIXED = "Mixed"  # a claim with devices of several types
UNKNOWN = "Unknown"  # failed before its devices were known
OFFER_TYPES = (PHYSICAL, MIG, SHARED, VFIO, MIXED, UNKNOWN)
PREPARED_TYPES = (PHYSICAL, MIG, SHARED, VFIO, MIXED)

# Why a prepare or an unprepare failed.
ALLOCATION = "allocation"  # the allocation names no offer of this node, or the claim was replaced
CONFIG = "config"  # the claim's opaque configuration is refused
CONFLICT = "conflict"  # it conflicts with what is prepared on the card
ROLLBACK = "rollback"  # rolling back an interrupted prepare of the same claim failed
CHECKPOINT = "checkpoint"  # the checkpoint could not be read or written
MIG_REASON = "mig"  # switching MIG mode, creating or destroying an instance
SHARING = "sharing"  # time-slicing, MPS daemons
VFIO_REASON = "vfio"  # binding the card for passthrough
METADATA = "metadata"  # device metadata files
CDI = "cdi"  # the claim's CDI spec
FILES = "files"  # a host file (CDI spec, metadata, checkpoint) during unprepare
API = "api"  # reading the claim or the node's cards, writing the claim's status
LOCK = "lock"  # the node-wide lock was not free in time
OTHER = "other"
REASONS = (
    ALLOCATION, CONFIG, CONFLICT, ROLLBACK, CHECKPOINT, MIG_REASON, SHARING, VFIO_REASON,
    METADATA, CDI, FILES, API, LOCK, OTHER,
)  # fmt: skip

_STEP_REASONS = {
    "short-circuit-completed": CHECKPOINT,
    "plan": ALLOCATION,
    "check-config": CONFIG,
    "invariant-guard": CONFLICT,
    "roll-back-leftover": ROLLBACK,
    "mark-started": CHECKPOINT,
    "mark-completed": CHECKPOINT,
    "switch-mig-mode": MIG_REASON,
    "create-mig": MIG_REASON,
    "set-card-sharing": SHARING,
    "start-mps": SHARING,
    "write-device-metadata": METADATA,
    "write-cdi": CDI,
}
# Steps named after what they touch, for steps added later.
_STEP_WORDS = (
    ("vfio", VFIO_REASON),
    ("mig", MIG_REASON),
    ("mps", SHARING),
    ("sharing", SHARING),
    ("cdi", CDI),
    ("metadata", METADATA),
    ("config", CONFIG),
)


def device_type(plan: DevicePlan) -> str:
    if plan.share_id:
        return SHARED
    kind = str(plan.kind)
    return kind if kind in (PHYSICAL, MIG, VFIO) else UNKNOWN


def offer_type(devices: Iterable[DevicePlan]) -> str:
    """The claim's type: the type of all its devices, ``Mixed`` when they differ."""
    types = {device_type(plan) for plan in devices}
    if not types:
        return UNKNOWN
    return types.pop() if len(types) == 1 else MIXED


def prepared_by_type(checkpoint: Checkpoint) -> dict[str, int]:
    """Completely prepared claims per offer type; every type present, zero or not."""
    counts = dict.fromkeys(PREPARED_TYPES, 0)
    for entry in checkpoint.claims.values():
        if entry.state == "PrepareCompleted":
            kind = offer_type(entry.devices)
            counts[kind if kind in counts else MIXED] += 1
    return counts


def step_reason(step: str | None) -> str:
    """The reason of a failure in ``step``; None: before the steps ran (reading the claim)."""
    if step is None:
        return API
    if step in _STEP_REASONS:
        return _STEP_REASONS[step]
    return next((reason for word, reason in _STEP_WORDS if word in step), OTHER)


def failed_step(steps: Sequence[str], last_done: str | None) -> str | None:
    """The step that failed when ``last_done`` was the last to finish. None when the failure was
    outside the steps: before the first (which never fails: it only reads the checkpoint), while
    the claim was read, or after the last, while its status was written."""
    if last_done is None or last_done not in steps:
        return None
    index = steps.index(last_done) + 1
    return steps[index] if index < len(steps) else None
