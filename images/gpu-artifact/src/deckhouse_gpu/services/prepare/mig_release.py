# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MIG's release (DESIGN.md D9, D20): a claim's instances destroyed, its cards' MIG mode given
back, and at start the instances no entry owns. The parts of ``MIG_RELEASE`` are looped over by
services/prepare/host_release.py with every feature's; the MIG prepare steps are
services/prepare/prepare_mig_steps.py."""

from __future__ import annotations

import contextlib
import logging

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.mig import MigControl, MigError
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, HostPorts, Releasing, Save

log = logging.getLogger(__name__)


def release_mig(state: Releasing) -> None:
    """Destroys the claim's MIG instances, switches MIG off where the claim switched it on and
    nothing else uses it, and on again where an unfinished prepare switched it off."""
    entry, mig = state.entry, state.ports.mig
    current = entry
    for record in entry.mig:
        mig.destroy_instance(record.card, record.gpu_instance_id, record.compute_instance_id)
        current = current.without_mig(record.key)
        state.checkpoint = state.checkpoint.with_entry(current)
        state.save(state.checkpoint)
    if entry.state == "PrepareStarted":
        _destroy_unrecorded(entry, state.checkpoint, mig)
    for card in entry.mig_enabled_cards:
        state.checkpoint = _disable_or_hand_over(card, entry.uid, state.checkpoint, mig, state.save)
    # MIG mode off is what a whole card needs and what a card offered whole starts from; MIG
    # prepare switches it on when an instance is wanted. So a whole-card claim that was prepared
    # leaves the card off for the next one, while a prepare that never finished (failed, or
    # crashed and rolled back) gives the card back the mode it found (DESIGN.md D9).
    if entry.state == "PrepareStarted":
        for card in entry.mig_disabled_cards:
            _enable_again(card, entry.uid, state.checkpoint, mig)


def clean_mig(checkpoint: Checkpoint, ports: HostPorts, cards: list[str]) -> None:
    """At start: the MIG instances no entry owns on ``cards`` in MIG mode."""
    mig = ports.mig
    owned = checkpoint.owned_mig()
    for card in cards:
        if not _mig_enabled(mig, card):
            continue
        for instance in mig.instances(card):
            if instance.key not in owned:
                log.warning(
                    "destroying a MIG instance no claim owns", extra={"card": card, "uuid": instance.uuid}
                )
                mig.destroy_instance(card, instance.gpu_instance_id, instance.compute_instance_id)


def _mig_enabled(mig: MigControl, card: str) -> bool:
    try:
        return mig.mig_enabled(card)
    except MigError:
        return False  # NVML cannot see the card (on vfio-pci, lost): no instance to look at


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


def _enable_again(card: str, uid: str, checkpoint: Checkpoint, mig: MigControl) -> None:
    """Switches MIG mode on again on a card an unfinished prepare switched off for a whole card.
    Best effort: off is a mode the card can serve in, and a claim's retry must not fail on it."""
    if any(
        other.uid != uid and any(d.card == card for d in other.devices)
        for other in checkpoint.claims.values()
    ):
        return  # another claim (a share of the card) uses it as it is now
    if mig.mig_enabled(card):
        return  # the switch was never made or waits for a reset: nothing to give back
    if mig.card_busy(card):
        log.warning("MIG mode stays off: processes run on the card", extra={"card": card})
        return
    try:
        mig.set_mig_mode(card, True)
    except MigError as error:
        log.warning(
            "MIG mode stays off: it cannot be switched on again", extra={"card": card, "error": str(error)}
        )
        with contextlib.suppress(MigError):
            mig.set_mig_mode(card, False)  # cancels a switch left pending until the next reset
        return
    log.info(
        "MIG mode switched on again: the prepare that switched it off was rolled back", extra={"card": card}
    )


MIG_RELEASE = FeatureRelease(devices=release_mig, unowned_devices=clean_mig)
