"""NodePrepareResources for one claim as an ordered list of small steps, each with its undo.

The runner runs the steps in order; when one fails it undoes the finished ones in reverse. A
crash (no undo runs) leaves a ``PrepareStarted`` entry whose records let the next call roll
everything back (services/host_release.py), because every host change is saved as it happens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from deckhouse_gpu.domain.allocation.claim_config import ConfigRefused, device_config
from deckhouse_gpu.domain.config.opaque_types import VFIOConfig
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.guard import conflicts
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan, PlanError, plan_claim
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.mig import MigControl, MigError, MigModePending
from deckhouse_gpu.services.host_release import release, unowned_at

log = logging.getLogger(__name__)


class PrepareError(Exception):
    """What the kubelet shows on the Pod: what failed and what to do."""


@dataclass
class PrepareContext:
    claim: ClaimRef
    checkpoint: Checkpoint
    save: Callable[[Checkpoint], None]
    mig: MigControl
    cdi: ClaimCDI
    now: str
    claim_object: dict[str, Any] | None = None  # the ResourceClaim as read from the API
    cards: list[dict[str, Any]] = field(default_factory=list)  # this node's PhysicalGPUs
    pool: str = ""
    plans: tuple[DevicePlan, ...] = ()
    entry: ClaimEntry | None = None
    done: bool = False  # a step found the claim already prepared: the rest is skipped

    def store(self, entry: ClaimEntry) -> None:
        self.entry = entry
        self.checkpoint = self.checkpoint.with_entry(entry)
        self.save(self.checkpoint)


class Step(Protocol):
    name: str

    def run(self, ctx: PrepareContext) -> None: ...

    def undo(self, ctx: PrepareContext) -> None: ...


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
            ctx.checkpoint = release(entry, ctx.checkpoint, ctx.mig, ctx.cdi, ctx.save)

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


class CheckConfig:
    """Decodes the driver's opaque config of every device before anything on a card changes: a
    config that slipped past the webhook (it may be skipped) fails here with the same message."""

    name = "check-config"

    def run(self, ctx: PrepareContext) -> None:
        allocation = ((ctx.claim_object or {}).get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        for plan in ctx.plans:
            result: dict[str, Any] = next(
                (
                    r
                    for r in results
                    if r.get("device") == plan.device
                    and r.get("pool") == plan.pool
                    and (r.get("shareID") or None) == plan.share_id
                ),
                {},
            )
            try:
                config = device_config(result, allocation, plan.kind)
            except ConfigRefused as error:
                raise PrepareError(f"device {plan.device}: {error}") from error
            if isinstance(config, VFIOConfig):
                raise PrepareError(
                    f"device {plan.device}: VFIOConfig asks for passthrough to a virtual machine, which "
                    "this version of the module does not prepare yet; remove the VFIOConfig to use the "
                    "card in a Pod"
                )

    def undo(self, ctx: PrepareContext) -> None:
        pass


class Guard:
    name = "invariant-guard"

    def run(self, ctx: PrepareContext) -> None:
        found = conflicts(ctx.claim.uid, ctx.plans, ctx.checkpoint.claims.values())
        if found:
            raise PrepareError("; ".join(found) + ": unprepare the other claim first or delete this one")

    def undo(self, ctx: PrepareContext) -> None:
        pass


class MarkStarted:
    name = "mark-started"

    def run(self, ctx: PrepareContext) -> None:
        ref = ctx.claim
        ctx.store(ClaimEntry(ref.uid, ref.namespace, ref.name, "PrepareStarted", ctx.plans, updated=ctx.now))

    def undo(self, ctx: PrepareContext) -> None:
        ctx.checkpoint = ctx.checkpoint.without(ctx.claim.uid)
        ctx.save(ctx.checkpoint)


class CreateMig:
    name = "create-mig"

    def run(self, ctx: PrepareContext) -> None:
        for plan in ctx.plans:
            if plan.kind == "Physical":
                self._whole_card(ctx, plan.card)
            if plan.kind != "MIG" or plan.profile_id is None or plan.placement_start is None:
                continue
            assert ctx.entry is not None
            if not ctx.mig.mig_enabled(plan.card):
                self._enable(ctx, plan.card)
            if (kept := unowned_at(plan, ctx.checkpoint, ctx.mig)) is not None:
                # Only this claim was given this placement: an instance there that no entry owns is
                # its own, kept through a lost checkpoint and still used by its Pod. Adopt it.
                ctx.store(ctx.entry.with_mig(MigRecord.from_instance(kept)))
                continue
            try:
                instance = ctx.mig.create_instance(plan.card, plan.profile_id, plan.placement_start)
            except MigError as error:
                raise PrepareError(f"cannot create {plan.device}: {error}") from error
            ctx.store(ctx.entry.with_mig(MigRecord.from_instance(instance)))

    @staticmethod
    def _whole_card(ctx: PrepareContext, card: str) -> None:
        """A whole card in MIG mode shows no CUDA device to the container: switch MIG off first."""
        if not ctx.mig.mig_enabled(card):
            return
        if ctx.mig.instances(card):
            raise PrepareError(
                f"card {card} has MIG instances that no claim of this driver prepared; destroy them "
                "(nvidia-smi mig -dci; nvidia-smi mig -dgi) or delete the claim"
            )
        try:
            ctx.mig.set_mig_mode(card, False)
        except MigModePending as error:
            raise PrepareError(f"switching MIG off on card {card} waits for a GPU reset: {error}") from error
        except MigError as error:
            raise PrepareError(f"cannot switch MIG off on card {card}: {error}") from error

    @staticmethod
    def _enable(ctx: PrepareContext, card: str) -> None:
        assert ctx.entry is not None
        if ctx.mig.card_busy(card):
            raise PrepareError(
                f"card {card} needs MIG mode but processes run on it: stop them; the kubelet retries"
            )
        ctx.store(ctx.entry.with_mig_enabled(card))  # the intent first, so a crash can undo it
        try:
            ctx.mig.set_mig_mode(card, True)
        except MigModePending as error:
            raise PrepareError(f"MIG mode on card {card} waits for a GPU reset: {error}") from error
        except MigError as error:
            raise PrepareError(f"cannot enable MIG mode on card {card}: {error}") from error

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.entry is not None:
            ctx.checkpoint = release(ctx.entry, ctx.checkpoint, ctx.mig, ctx.cdi, ctx.save)
            ctx.entry = None


class WriteCdi:
    name = "write-cdi"

    def run(self, ctx: PrepareContext) -> None:
        assert ctx.entry is not None
        ids = ctx.cdi.write_claim(ctx.claim.uid, ctx.plans, ctx.entry.mig)
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
    MarkStarted(),
    CreateMig(),
    WriteCdi(),
    MarkCompleted(),
)


def run_steps(
    steps: tuple[Step, ...], ctx: PrepareContext, after: Callable[[str], None] | None = None
) -> None:
    """Runs ``steps``; on a failure undoes the failed step (it may have done part of its work) and
    the finished ones, in reverse, and re-raises.

    ``after`` is called at every step boundary (metrics, and the crash tests' kill point).
    """
    finished: list[Step] = []
    for step in steps:
        if ctx.done:
            return
        try:
            step.run(ctx)
        except Exception:
            for done in reversed([*finished, step]):
                try:
                    done.undo(ctx)
                except Exception:
                    log.exception(
                        "undo failed; the next call rolls back from the checkpoint", extra={"step": done.name}
                    )
            raise
        finished.append(step)
        if after is not None:
            after(step.name)
