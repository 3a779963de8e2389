# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler's prepare metrics count: offer types and failure reasons, from fixed lists."""

from __future__ import annotations

from dataclasses import replace

import pytest

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.metrics import (
    OFFER_TYPES,
    REASONS,
    failed_step,
    offer_type,
    prepared_by_type,
    step_reason,
)
from deckhouse_gpu.domain.prepare.plan import DevicePlan

WHOLE = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", "0000:17:00.0", "Physical")
MIG = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0-mig-1g-6gb-0", "0000:17:00.0", "MIG", None, 14, 0, 1)
SHARE = replace(WHOLE, share_id="0b7c")


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        ((WHOLE,), "Physical"),
        ((MIG, MIG), "MIG"),
        ((SHARE,), "Shared"),
        ((replace(MIG, share_id="s"),), "Shared"),  # an MPS share of a MIG instance
        ((WHOLE, MIG), "Mixed"),
        ((), "Unknown"),  # failed before the plan
    ],
)
def test_the_offer_type_of_a_claim(devices, expected):
    assert offer_type(devices) == expected
    assert expected in OFFER_TYPES


def test_prepared_claims_count_only_completed_entries_and_every_type_is_there():
    entries = [
        ClaimEntry("a", "ns", "a", "PrepareCompleted", (WHOLE,)),
        ClaimEntry("b", "ns", "b", "PrepareCompleted", (MIG,)),
        ClaimEntry("c", "ns", "c", "PrepareStarted", (MIG,)),
        ClaimEntry("d", "ns", "d", "PrepareCompleted", (SHARE, SHARE)),
    ]
    checkpoint = Checkpoint("boot", {e.uid: e for e in entries})
    assert prepared_by_type(checkpoint) == {"Physical": 1, "MIG": 1, "Shared": 1, "VFIO": 0, "Mixed": 0}


STEPS = (
    *("short-circuit-completed", "roll-back-leftover", "plan"),
    *("check-config", "write-cdi", "mark-completed"),
)


@pytest.mark.parametrize(
    ("last_done", "failed"),
    [
        ("roll-back-leftover", "plan"),
        ("plan", "check-config"),
        ("write-cdi", "mark-completed"),
        (None, None),  # nothing ran: reading the claim failed
        ("mark-completed", None),  # all ran: writing the claim's status failed
        ("a-step-of-another-list", None),
    ],
)
def test_the_failed_step_is_the_one_after_the_last_that_finished(last_done, failed):
    assert failed_step(STEPS, last_done) == failed


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (None, "api"),
        ("plan", "allocation"),
        ("check-config", "config"),
        ("invariant-guard", "conflict"),
        ("create-mig", "mig"),
        ("start-mps", "sharing"),
        ("write-cdi", "cdi"),
        ("write-device-metadata", "metadata"),
        ("mark-started", "checkpoint"),
        ("bind-vfio-pci", "vfio"),  # a step added later is known by its name
        ("something-new", "other"),
    ],
)
def test_a_failed_step_gives_a_reason_from_a_fixed_list(step, reason):
    assert step_reason(step) == reason
    assert reason in REASONS
