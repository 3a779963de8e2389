# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NodePrepareResources for one claim as an ordered list of small steps, each with its undo.

The runner (services/prepare/prepare_context.py) runs the steps in order; when one fails it undoes the
finished ones in reverse. A crash (no undo runs) leaves a ``PrepareStarted`` entry whose records
let the next call roll everything back (services/prepare/host_release.py), because every host change is
saved as it happens (DESIGN.md D9). The steps here are the pipeline's own; each feature (MIG in
services/prepare/prepare_mig_steps.py, sharing in services/prepare/prepare_sharing_steps.py, passthrough to a
virtual machine in services/prepare/prepare_vfio_steps.py, the device metadata files in
services/prepare/prepare_metadata_steps.py) gives its steps and its CDI edits as one ``PrepareFeature``,
registered in ``FEATURES`` (DESIGN.md D20): the pipeline and the CDI writer loop over them.
"""

from __future__ import annotations

import logging

from deckhouse_gpu.domain.prepare.attribution import claim_attribution
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.container.cdi_spec import merge_device_edits
from deckhouse_gpu.domain.prepare.guard import conflicts, held_by_other
from deckhouse_gpu.domain.prepare.mps import one_daemon_per_claim
from deckhouse_gpu.domain.prepare.plan import PlanError, plan_claim
from deckhouse_gpu.domain.prepare.sharing import sharing_conflicts
from deckhouse_gpu.services.prepare.prepare_context import (
    PrepareContext,
    PrepareError,
    PrepareFeature,
    Step,
    run_steps,
)
from deckhouse_gpu.services.prepare.prepare_metadata_steps import METADATA_FEATURE
from deckhouse_gpu.services.prepare.prepare_mig_steps import MIG_FEATURE
from deckhouse_gpu.services.prepare.prepare_sharing_steps import SHARING_FEATURE, CheckConfig
from deckhouse_gpu.services.prepare.prepare_vfio_steps import VFIO_FEATURE

# The runner and its context are re-exported: services/prepare/service.py takes them from here.
__all__ = ["FEATURES", "PREPARE_STEPS", "PrepareContext", "PrepareError", "Step", "run_steps"]

# The features, in the order their steps of one phase run and their CDI edits merge (an MPS
# device's client setup first, then its metadata mount). The phases order the rest: a MIG instance
# (devices) exists before its MPS daemon starts on it (settings).
FEATURES: tuple[PrepareFeature, ...] = (MIG_FEATURE, SHARING_FEATURE, METADATA_FEATURE, VFIO_FEATURE)

log = logging.getLogger(__name__)


class ShortCircuit:
    name = "short-circuit-completed"

    def run(self, ctx: PrepareContext) -> None:
        entry = ctx.checkpoint.get(ctx.claim.uid)
        if entry is not None and entry.state == "PrepareCompleted":
            ctx.entry, ctx.done = entry, True  # idempotent: the kubelet retried a finished call

    def undo(self, ctx: PrepareContext) -> None:
        pass


class RollBackLeftover:
    name = "roll-back-leftover"

    def run(self, ctx: PrepareContext) -> None:
        entry = ctx.checkpoint.get(ctx.claim.uid)
        if entry is not None and entry.state == "PrepareStarted":
            log.warning("rolling back an interrupted prepare", extra={"claim": ctx.claim.uid})
            ctx.release_entry(entry)

    def undo(self, ctx: PrepareContext) -> None:
        pass


class Plan:
    name = "plan"

    def run(self, ctx: PrepareContext) -> None:
        claim = ctx.claim_object or {}
        uid = claim.get("metadata", {}).get("uid")
        if uid != ctx.claim.uid:
            raise PrepareError(
                f"ResourceClaim {ctx.claim.namespace}/{ctx.claim.name} has UID {uid}, the kubelet asked for "
                f"{ctx.claim.uid}: the claim was replaced; the kubelet retries with the new one"
            )
        try:
            ctx.plans = plan_claim(claim, ctx.pool, ctx.cards)
        except PlanError as error:
            raise PrepareError(str(error)) from error

    def undo(self, ctx: PrepareContext) -> None:
        pass


class Guard:
    name = "invariant-guard"

    def run(self, ctx: PrepareContext) -> None:
        prepared = ctx.checkpoint.claims.values()
        found = conflicts(ctx.claim.uid, ctx.plans, prepared)
        found += sharing_conflicts(ctx.claim.uid, ctx.plans, prepared)
        if (several := one_daemon_per_claim(ctx.plans)) is not None:
            found.append(several)
        if held := held_by_other(ctx.plans, ctx.held):
            raise PrepareError(held)
        if found:
            raise PrepareError("; ".join(found) + ": unprepare the other claim first or delete this one")

    def undo(self, ctx: PrepareContext) -> None:
        pass


class MarkStarted:
    name = "mark-started"

    def run(self, ctx: PrepareContext) -> None:
        ref = ctx.claim
        # Who the devices serve, for the prepared-device info metric
        # (adapters/metrics/attribution_metrics.py).
        attribution = claim_attribution(ctx.claim_object or {}, ctx.plans, ctx.cards)
        ctx.store(
            ClaimEntry(
                ref.uid, ref.namespace, ref.name, "PrepareStarted", ctx.plans,
                updated=ctx.now, attribution=attribution,
            )
        )  # fmt: skip

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.rollback_incomplete and ctx.saved is not None:
            # Dropping the entry would forget a MIG instance, a mode, a setting or a function on
            # vfio-pci that an undo could not give back: it stays, as saved, for the next call.
            ctx.checkpoint = ctx.saved
            return
        ctx.checkpoint = ctx.checkpoint.without(ctx.claim.uid)
        ctx.save(ctx.checkpoint)


class WriteCdi:
    name = "write-cdi"

    def __init__(self, features: tuple[PrepareFeature, ...]) -> None:
        self.features = features

    def run(self, ctx: PrepareContext) -> None:
        assert ctx.entry is not None
        # Each device's own edits, from every feature: its MPS client setup, the mount of its
        # metadata file, its VFIO nodes.
        edits = merge_device_edits(*(feature.device_edits(ctx) for feature in self.features))
        ids = ctx.cdi.write_claim(ctx.claim.uid, ctx.plans, ctx.entry.mig, edits)
        ctx.entry = ctx.entry.completed(ids, ctx.now).with_state(
            "PrepareStarted"
        )  # ids kept for the next step

    def undo(self, ctx: PrepareContext) -> None:
        ctx.cdi.delete_claim(ctx.claim.uid)


class MarkCompleted:
    name = "mark-completed"

    def run(self, ctx: PrepareContext) -> None:
        assert ctx.entry is not None
        ctx.store(ctx.entry.with_state("PrepareCompleted", ctx.now))

    def undo(self, ctx: PrepareContext) -> None:
        pass


PREPARE_STEPS: tuple[Step, ...] = (
    ShortCircuit(),
    RollBackLeftover(),
    Plan(),
    CheckConfig(),
    Guard(),
    *(step for feature in FEATURES for step in feature.checks),
    MarkStarted(),
    *(step for feature in FEATURES for step in feature.devices),
    *(step for feature in FEATURES for step in feature.settings),
    *(step for feature in FEATURES for step in feature.files),
    WriteCdi(FEATURES),
    MarkCompleted(),
)
