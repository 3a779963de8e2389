"""Undoing a claim's host changes: shared by unprepare, by the rollback of a leftover PrepareStarted
entry and by the cleanup at start. Every action is idempotent, and the checkpoint is saved after
each one, so a crash in the middle resumes where it stopped."""

from __future__ import annotations

import logging
from collections.abc import Callable

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.mig import MigControl

log = logging.getLogger(__name__)

Save = Callable[[Checkpoint], None]


def release(
    entry: ClaimEntry, checkpoint: Checkpoint, mig: MigControl, cdi: ClaimCDI, save: Save
) -> Checkpoint:
    """Destroys the claim's MIG instances, switches MIG off where the claim switched it on and
    nothing else uses it, deletes the claim's CDI spec and drops the entry."""
    current = entry
    for record in entry.mig:
        mig.destroy_instance(record.card, record.gpu_instance_id, record.compute_instance_id)
        current = current.without_mig(record.key)
        checkpoint = checkpoint.with_entry(current)
        save(checkpoint)
    if entry.state == "PrepareStarted":
        _destroy_unrecorded(entry, checkpoint, mig)
    for card in entry.mig_enabled_cards:
        checkpoint = _disable_or_hand_over(card, entry.uid, checkpoint, mig, save)
    cdi.delete_claim(entry.uid)
    checkpoint = checkpoint.without(entry.uid)
    save(checkpoint)
    return checkpoint


def unowned_at(plan: DevicePlan, checkpoint: Checkpoint, mig: MigControl) -> MigInstance | None:
    """The instance at the plan's profile and placement that no checkpoint entry owns, if any."""
    owned = checkpoint.owned_mig()
    for instance in mig.instances(plan.card):
        at_plan = (instance.profile_id, instance.placement_start) == (plan.profile_id, plan.placement_start)
        if at_plan and instance.key not in owned:
            return instance
    return None


def _destroy_unrecorded(entry: ClaimEntry, checkpoint: Checkpoint, mig: MigControl) -> None:
    """A crash between creating an instance and recording it leaves one nobody owns: find it by
    the placement the claim asked for."""
    for plan in entry.devices:
        if plan.kind != "MIG":
            continue
        if (instance := unowned_at(plan, checkpoint, mig)) is not None:
            log.warning(
                "destroying an unrecorded MIG instance of a rolled-back prepare",
                extra={"card": plan.card},
            )
            mig.destroy_instance(instance.card, instance.gpu_instance_id, instance.compute_instance_id)


def _disable_or_hand_over(
    card: str, uid: str, checkpoint: Checkpoint, mig: MigControl, save: Save
) -> Checkpoint:
    """Switches MIG off on a card this claim switched on, once nothing uses it; while another claim
    still has instances there, that claim inherits the duty, so the last one out switches it off."""
    heir = next(
        (
            entry
            for entry in checkpoint.claims.values()
            if entry.uid != uid and any(d.card == card and d.kind == "MIG" for d in entry.devices)
        ),
        None,
    )
    if heir is not None:
        checkpoint = checkpoint.with_entry(heir.with_mig_enabled(card))
        save(checkpoint)
        return checkpoint
    if mig.instances(card) or not mig.mig_enabled(card):
        return checkpoint
    mig.set_mig_mode(card, False)
    log.info("MIG mode switched off again: the last instance on the card is gone", extra={"card": card})
    return checkpoint
