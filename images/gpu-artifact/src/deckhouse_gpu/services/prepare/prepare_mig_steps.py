# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare steps that change a card: its MIG mode, then its MIG instances.

Each change is saved in the claim's ``PrepareStarted`` entry as it happens (DESIGN.md D9): a mode
switch before it is made, an instance as soon as it exists. Both steps undo by releasing what the
entry records (services/prepare/host_release.py, MIG's part in services/prepare/mig_release.py), as
the rollback after a crash does.
"""

from __future__ import annotations

from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.ports.mig import MigError, MigModePending
from deckhouse_gpu.services.prepare.mig_release import MIG_RELEASE, unowned_at
from deckhouse_gpu.services.prepare.prepare_context import PrepareContext, PrepareError, PrepareFeature


def release_entry(ctx: PrepareContext) -> None:
    """The undo of the steps that change the host: everything the entry records, released. Strict:
    what cannot be given back raises, and the entry keeps it for the next call (run_steps)."""
    if ctx.entry is not None:
        ctx.release_entry(ctx.checkpoint.get(ctx.entry.uid) or ctx.entry)
        ctx.entry = None


class SwitchMigMode:
    """Each card into the mode its devices need: MIG mode off for a whole card (in MIG mode it
    shows no CUDA device to the container), on for a MIG instance. The intent is saved before each
    switch, so a crash right after it still knows which mode to give back."""

    name = "switch-mig-mode"

    def run(self, ctx: PrepareContext) -> None:
        for plan in ctx.plans:
            if plan.vfio and (group := ctx.vfio_groups.get(plan.card)) is not None and group.prebound:
                continue  # on vfio-pci already: NVML cannot see it, and the VM's driver sets its mode
            if plan.kind == "Physical" and ctx.mig.mig_enabled(plan.card):
                self._off(ctx, plan.card)
            elif plan.kind == "MIG" and not ctx.mig.mig_enabled(plan.card):
                self._on(ctx, plan.card)

    @staticmethod
    def _off(ctx: PrepareContext, card: str) -> None:
        assert ctx.entry is not None
        if ctx.mig.instances(card):
            raise PrepareError(
                f"card {card} has MIG instances that no claim of this driver prepared; destroy them "
                "(nvidia-smi mig -dci; nvidia-smi mig -dgi) or delete the claim"
            )
        ctx.store(ctx.entry.with_mig_disabled(card))  # the intent first, so a crash can undo it
        try:
            ctx.mig.set_mig_mode(card, False)
        except MigModePending as error:
            raise PrepareError(f"switching MIG off on card {card} waits for a GPU reset: {error}") from error
        except MigError as error:
            raise PrepareError(f"cannot switch MIG off on card {card}: {error}") from error

    @staticmethod
    def _on(ctx: PrepareContext, card: str) -> None:
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
        release_entry(ctx)  # gives each card back the mode it had (services/prepare/host_release.py)


class CreateMig:
    """One MIG instance per MIG device, at the allocated placement, each saved as it exists."""

    name = "create-mig"

    def run(self, ctx: PrepareContext) -> None:
        for plan in ctx.plans:
            if plan.kind != "MIG" or plan.profile_id is None or plan.placement_start is None:
                continue
            assert ctx.entry is not None
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

    def undo(self, ctx: PrepareContext) -> None:
        release_entry(ctx)


# A MIG instance's device node comes with the claim's CDI spec itself (adapters/files/claim_cdi_files.py).
MIG_FEATURE = PrepareFeature("mig", devices=(SwitchMigMode(), CreateMig()), release=MIG_RELEASE)
