# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.guard import conflicts
from deckhouse_gpu.domain.prepare.plan import DevicePlan, PlanError, plan_claim
from testkit.gpu_objects import ready_card

A30 = "0000:17:00.0"
CARDS = [ready_card("w1", A30, "a30"), ready_card("w1", "0000:31:00.0", "a30")]


def claim(*results, uid="u1"):
    return {
        "metadata": {"uid": uid, "name": "c", "namespace": "ns"},
        "status": {"allocation": {"devices": {"results": list(results)}}},
    }


def result(device, request="gpu", pool="gpus/w1", driver="gpu.deckhouse.io", share=None):
    item = {"request": request, "driver": driver, "pool": pool, "device": device}
    if share:
        item["shareID"] = share
    return item


def test_physical_and_mig_devices_are_identified_from_their_offer_names():
    plans = plan_claim(
        claim(result("gpu-0000-17-00-0"), result("gpu-0000-31-00-0-mig-2g-12gb-2", request="mig/small")),
        "gpus/w1",
        CARDS,
    )
    uuid = CARDS[0]["status"]["currentState"]["nvidia"]["gpuUUID"]
    assert uuid.startswith("GPU-")  # an MPS daemon of the card needs it
    assert plans[0] == DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", A30, "Physical", uuid=uuid)
    mig = plans[1]
    assert (mig.card, mig.kind, mig.profile_id, mig.placement_start, mig.placement_size) == (
        "0000:31:00.0",
        "MIG",
        5,
        2,
        2,
    )


def test_other_drivers_and_pools_are_ignored():
    plans = plan_claim(
        claim(
            result("gpu-0000-17-00-0"),
            result("nic-0", driver="example.com/nic"),
            result("gpu-0000-17-00-0", pool="gpus/w2"),
        ),
        "gpus/w1",
        CARDS,
    )
    assert [p.device for p in plans] == ["gpu-0000-17-00-0"]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"metadata": {"uid": "u1"}, "status": {}}, "not allocated"),
        (claim(result("nic-0", driver="example.com/nic")), "no devices of gpu.deckhouse.io"),
        (claim(result("gpu-0000-99-00-0")), "not an offer of any GPU on this node"),
        (claim(result("gpu-0000-17-00-0-mig-9g-99gb-0")), "not an offer"),
        (claim(result("gpu-0000-17-00-0"), result("gpu-0000-17-00-0", request="other")), "same device twice"),
    ],
)
def test_unpreparable_claims_are_refused_clearly(obj, message):
    with pytest.raises(PlanError, match=message):
        plan_claim(obj, "gpus/w1", CARDS)


def entry(uid, *plans):
    return ClaimEntry(uid, "ns", uid, "PrepareCompleted", tuple(plans))


PHYSICAL = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", A30, "Physical")
MIG_0 = DevicePlan("gpu", "gpus/w1", "m0", A30, "MIG", None, 14, 0, 1)
MIG_0_2 = DevicePlan("gpu", "gpus/w1", "m02", A30, "MIG", None, 5, 0, 2)
MIG_1 = DevicePlan("gpu", "gpus/w1", "m1", A30, "MIG", None, 14, 1, 1)
SHARE_A = DevicePlan(
    "gpu", "gpus/w1", "gpu-0000-17-00-0", A30, "Physical", "11111111-1111-4111-8111-111111111111"
)
SHARE_B = DevicePlan(
    "gpu", "gpus/w1", "gpu-0000-17-00-0", A30, "Physical", "22222222-2222-4222-8222-222222222222"
)


@pytest.mark.parametrize(
    ("new", "old", "reason"),
    [
        (PHYSICAL, MIG_0, "has MIG instances prepared"),
        (MIG_0, PHYSICAL, "is prepared whole"),
        (PHYSICAL, PHYSICAL, "already prepared exclusively"),
        (SHARE_A, PHYSICAL, "already prepared exclusively"),
        (MIG_0_2, MIG_1, "overlaps"),
    ],
)
def test_the_guard_refuses_conflicts(new, old, reason):
    (found,) = conflicts("new", [new], [entry("old", old)])
    assert reason in found
    assert "old" in found  # names the claim holding the card


@pytest.mark.parametrize(("new", "old"), [(MIG_1, MIG_0), (SHARE_A, SHARE_B)])
def test_the_guard_allows_what_fits(new, old):
    assert conflicts("new", [new], [entry("old", old)]) == []


def test_a_claim_never_conflicts_with_itself_or_other_cards():
    assert conflicts("same", [PHYSICAL], [entry("same", PHYSICAL)]) == []
    other_card = DevicePlan("gpu", "gpus/w1", "gpu-0000-31-00-0", "0000:31:00.0", "Physical")
    assert conflicts("new", [other_card], [entry("old", PHYSICAL)]) == []
