# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Who a prepared claim serves (domain/prepare/attribution.py), kept in the checkpoint, and the
label sets of the prepared-device info derived from it (domain/prepare/attribution_series.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.attribution import (
    MAX_PODS,
    ClaimAttribution,
    DeviceAttribution,
    claim_attribution,
    reserving_pods,
)
from deckhouse_gpu.domain.prepare.attribution_series import dcgm_bus_id, prepared_device_series
from deckhouse_gpu.domain.prepare.checkpoint import (
    Checkpoint,
    ClaimEntry,
    CorruptCheckpoint,
    checksum,
    decode,
    encode,
)
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan

BOOT = "boot-1"
CARD = "0000:ca:00.0"
POOL = "gpus/w1"
WHOLE = DevicePlan("gpu", POOL, "gpu-0000-ca-00-0", CARD, "Physical", uuid="GPU-plan")
MIG = DevicePlan("gpu", POOL, "gpu-0000-ca-00-0-mig-1g.10gb-2", CARD, "MIG", None, 19, 2, 1)
SHARE = DevicePlan("gpu/shared", POOL, "gpu-0000-ca-00-0", CARD, "Physical", share_id="s-1")


def phys_card(uuid: str = "GPU-card") -> dict[str, Any]:
    profiles = [{"name": "1g.10gb", "profileID": 19, "memoryMiB": 9856, "placements": []}]
    return {
        "status": {
            "pciInfo": {"address": CARD},
            "currentState": {"nvidia": {"gpuUUID": uuid}},
            "capabilities": {"nvidia": {"mig": {"profiles": profiles}}},
        }
    }


def claim(*results: dict[str, Any], pods: tuple[str, ...] = ("p",)) -> dict[str, Any]:
    requests = [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu-h100"}},
        {"name": "gpu2", "firstAvailable": [{"name": "shared", "deviceClassName": "gpu-h100-shared"}]},
    ]
    reserved: list[dict[str, Any]] = [{"resource": "pods", "name": p, "uid": f"u-{p}"} for p in pods]
    reserved.append({"apiGroup": "batch", "resource": "jobs", "name": "not-a-pod", "uid": "j"})
    status = {"allocation": {"devices": {"results": list(results)}}, "reservedFor": reserved}
    return {"spec": {"devices": {"requests": requests}}, "status": status}


def result(plan: DevicePlan, **extra: Any) -> dict[str, Any]:
    found = {"request": plan.request, "driver": "gpu.deckhouse.io", "pool": plan.pool, "device": plan.device}
    return found | ({"shareID": plan.share_id} if plan.share_id else {}) | extra


def test_the_claim_says_its_pods_classes_share_and_the_card_its_uuid_and_profile():
    share = replace(SHARE, request="gpu2/shared")
    obj = claim(
        result(WHOLE), result(MIG), result(share, consumedCapacity={"sharePercent": "25"}), pods=("b", "a")
    )
    found = claim_attribution(obj, (WHOLE, MIG, share), [phys_card()])
    assert found.pods == ("a", "b")  # Pods only, sorted
    assert found.devices == (
        DeviceAttribution(WHOLE.device, None, "gpu-h100", "", "GPU-card", ""),
        DeviceAttribution(MIG.device, None, "gpu-h100", "", "GPU-card", "1g.10gb"),
        DeviceAttribution(share.device, "s-1", "gpu-h100-shared", "25", "GPU-card", ""),
    )


@pytest.mark.parametrize(("consumed", "shown"), [(None, "100"), ("12500m", "12.5"), ("many", "")])
def test_a_share_percent_as_a_plain_number(consumed: str | None, shown: str):
    extra = {} if consumed is None else {"consumedCapacity": {"sharePercent": consumed}}
    found = claim_attribution(claim(result(SHARE, **extra)), (SHARE,), [])
    assert found.devices[0].share_percent == shown


def test_pods_are_bounded():
    pods = tuple(f"pod-{i:03}" for i in range(300))
    assert reserving_pods(claim(pods=pods)) == pods[:MAX_PODS]


def entry(state: str = "PrepareCompleted", attribution: ClaimAttribution | None = None) -> ClaimEntry:
    mig = (MigRecord(CARD, 7, 0, 19, 2, 1, "MIG-7"),)
    return ClaimEntry("uid-1", "ml", "train", state, (WHOLE, MIG), mig, attribution=attribution)  # type: ignore[arg-type]


def test_the_checkpoint_keeps_the_attribution_and_reads_files_written_without_it():
    attribution = claim_attribution(claim(result(WHOLE), result(MIG)), (WHOLE, MIG), [phys_card()])
    checkpoint = Checkpoint(BOOT).with_entry(entry(attribution=attribution))
    assert decode(encode(checkpoint), BOOT).checkpoint == checkpoint
    older = Checkpoint(BOOT).with_entry(entry())
    assert "attribution" not in encode(older).decode()
    assert decode(encode(older), BOOT).checkpoint.claims["uid-1"].attribution is None


def test_a_broken_attribution_is_a_corrupt_checkpoint():
    document = json.loads(encode(Checkpoint(BOOT).with_entry(entry(attribution=ClaimAttribution(("p",))))))
    document["claims"]["uid-1"]["attribution"]["pods"] = "p"
    document["checksum"] = checksum(document)
    with pytest.raises(CorruptCheckpoint, match=r"claims.uid-1.attribution.pods"):
        decode(json.dumps(document).encode(), BOOT)


def test_series_per_device_and_pod_with_dcgm_labels():
    attribution = claim_attribution(
        claim(result(WHOLE), result(MIG), pods=("p1", "p2")), (WHOLE, MIG), [phys_card()]
    )
    found = [
        s.values()
        for s in prepared_device_series(Checkpoint(BOOT).with_entry(entry(attribution=attribution)))
    ]
    whole = ("gpu-h100", "Physical", WHOLE.device, "GPU-card", "00000000:CA:00.0", "", "", "", "")
    mig = ("gpu-h100", "MIG", MIG.device, "GPU-card", "00000000:CA:00.0", "7", "1g.10gb", "MIG-7", "")
    # Sorted by their labels: the MIG instance's offer type sorts first.
    assert found == [("ml", pod, "train", *labels) for pod in ("p1", "p2") for labels in (mig, whole)]


def test_an_entry_of_an_older_handler_still_shows_its_devices_without_pods():
    (mig, whole) = prepared_device_series(Checkpoint(BOOT).with_entry(entry()))
    assert (whole.pod, whole.uuid, whole.device_class) == ("", "GPU-plan", "")  # the plan's UUID
    assert (mig.gpu_instance_id, mig.mig_profile) == ("7", "")


def test_only_completed_claims_are_shown():
    assert prepared_device_series(Checkpoint(BOOT).with_entry(entry("PrepareStarted"))) == []


@pytest.mark.parametrize(
    ("address", "dcgm"), [("0000:17:00.0", "00000000:17:00.0"), ("0001:ca:1f.7", "00000001:CA:1F.7")]
)
def test_pci_addresses_as_dcgm_prints_them(address: str, dcgm: str):
    assert dcgm_bus_id(address) == dcgm
