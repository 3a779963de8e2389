# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare pipeline is assembled from the registered features (services/prepare/prepare_steps.py
``FEATURES``, DESIGN.md D20): their steps run in the order of the phases, and the CDI writer
merges the per-device edits of every feature it is given, whatever the feature."""

from __future__ import annotations

from typing import cast
from unittest.mock import create_autospec

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.services.prepare.prepare_context import PrepareContext, PrepareFeature
from deckhouse_gpu.services.prepare.prepare_steps import FEATURES, PREPARE_STEPS, WriteCdi

PLAN = DevicePlan("gpu", "node-a", "gpu-0000-01-00-0", "0000:01:00.0", "Physical")
OTHER = DevicePlan("gpu", "node-a", "gpu-0000-02-00-0", "0000:02:00.0", "Physical")


def test_the_steps_run_in_the_order_of_the_phases_as_before_the_registry() -> None:
    assert [step.name for step in PREPARE_STEPS] == [
        "short-circuit-completed",
        "roll-back-leftover",
        "plan",
        "check-config",
        "invariant-guard",
        "check-vfio",
        "mark-started",
        "switch-mig-mode",
        "create-mig",
        "bind-vfio",
        "set-card-sharing",
        "start-mps",
        "write-device-metadata",
        "write-vfio-payload",
        "write-cdi",
        "mark-completed",
    ]
    contributed = [s for f in FEATURES for s in (*f.checks, *f.devices, *f.settings, *f.files)]
    assert all(step in PREPARE_STEPS for step in contributed)
    writer = next(step for step in PREPARE_STEPS if isinstance(step, WriteCdi))
    assert writer.features == FEATURES


def test_the_cdi_writer_merges_every_features_edits_in_registration_order() -> None:
    mount = {"hostPath": "/run/x", "containerPath": "/x", "options": ["ro"]}
    first = PrepareFeature("first", device_edits=lambda ctx: {PLAN.device: {"env": ["A=1"]}})
    nothing = PrepareFeature("nothing")
    second = PrepareFeature(
        "second",
        device_edits=lambda ctx: {
            PLAN.device: {"env": ["B=2"], "mounts": [mount]},
            OTHER.device: {"env": ["C=3"]},
        },
    )
    cdi = create_autospec(ClaimCDI, instance=True)
    cdi.write_claim.return_value = {OTHER.device: ("k8s.gpu.deckhouse.io/claim=uid-1-gpu-0000-02-00-0",)}
    claim = ClaimRef("default", "uid-1", "claim")
    ctx = PrepareContext(
        claim, Checkpoint("boot"), lambda saved: None, cast(MigControl, object()), cdi, "now"
    )
    ctx.plans = (PLAN, OTHER)
    ctx.entry = ClaimEntry(claim.uid, claim.namespace, claim.name, "PrepareStarted", ctx.plans)

    WriteCdi((first, nothing, second)).run(ctx)

    (uid, plans, mig, edits), _ = cdi.write_claim.call_args
    assert (uid, plans, mig) == (claim.uid, (PLAN, OTHER), ())
    assert edits == {
        PLAN.device: {"env": ["A=1", "B=2"], "mounts": [mount]},
        OTHER.device: {"env": ["C=3"]},
    }
    assert ctx.entry.cdi_device_ids[OTHER.device] == ("k8s.gpu.deckhouse.io/claim=uid-1-gpu-0000-02-00-0",)
