# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu status rows: each card's mode, holds, MIG instances and what its counters have left."""

from __future__ import annotations

from fractions import Fraction

from deckhouse_gpu.domain.inventory.physicalgpu import DriverType
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from deckhouse_gpu.domain.report.cards import (
    IDLE,
    MIG,
    SHARED,
    VFIO,
    WHOLE,
    CardRow,
    card_rows,
    counters_left,
)
from deckhouse_gpu.domain.report.holders import device_index
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS, RESOURCE_SLICES
from testkit.gpu_cluster import GpuCluster

GIB = 2**30


def _rows(cluster: GpuCluster) -> dict[tuple[str, str], CardRow]:
    kube = cluster.kube
    semantics = Semantics("1.35", strict=True)
    inventory = build_inventory(kube.list(RESOURCE_SLICES).items)
    claims = kube.list(RESOURCE_CLAIMS).items
    state = allocated_state(claims, True)
    found = card_rows(
        kube.list(PHYSICAL_GPUS).items,
        claims,
        device_index(inventory),
        counters_left(inventory, state, semantics),
        state.shares,
    )
    return {(row.node, row.address): row for row in found}


def _cluster() -> GpuCluster:
    cluster = GpuCluster()
    cluster.node("h100", "h100-80gb", 3)
    cluster.node("a100", "a100-40gb", 1, {"gpu.deckhouse.io/sharing": "true"})
    cluster.node("t4", "t4", 1)
    cluster.publish()
    cluster.classes()
    return cluster


def test_modes_holds_and_what_is_left() -> None:
    cluster = _cluster()
    cluster.claim("ml", "small", "gpu-h100-80gb-mig-1g.10gb", 2, node="h100", pod="train", prepared=True)
    cluster.claim("ml", "big", "gpu-h100-80gb", 1, node="h100", pod="big")
    cluster.claim("ml", "share", "gpu-a100-40gb-shared", 1, node="a100", pod="notebook", share="30")
    rows = _rows(cluster)
    mig, whole, idle = (rows["h100", f"0000:{a}:00.0"] for a in ("10", "18", "20"))
    assert (mig.mode, whole.mode, idle.mode) == (MIG, WHOLE, IDLE)
    assert [(m.profile, m.start, m.claim) for m in mig.mig] == [
        ("1g.10gb", 6, "ml/small"),  # packing order: from slice 6 down (placement_order.py)
        ("1g.10gb", 5, "ml/small"),
    ]
    assert [m.uuid for m in mig.mig] == [
        "MIG-gpu-0000-10-00-0-mig-1g-10gb-6",
        "MIG-gpu-0000-10-00-0-mig-1g-10gb-5",
    ]
    (hold,) = mig.holds
    assert (hold.claim, hold.prepared, hold.pods) == ("ml/small", True, ["ml/train"])
    assert (mig.slices_free, mig.slices_total) == ([0, 1, 2, 3, 4, 7], 8)
    assert mig.memory_total is not None
    assert mig.memory_left == mig.memory_total - 2 * 9984 * 2**20
    assert whole.holds[0].prepared is False
    assert (whole.slices_free, whole.memory_left) == ([], Fraction(0))  # the whole card takes its counter set
    assert (idle.slices_free, idle.holds, idle.offered) == (list(range(8)), [], True)
    shared = rows["a100", "0000:10:00.0"]
    assert (shared.mode, shared.share_left, shared.slices_total) == (SHARED, Fraction(70), None)
    assert rows["t4", "0000:10:00.0"].mode == IDLE
    assert all(row.ready for row in rows.values())


def test_a_card_for_a_virtual_machine_and_a_card_not_offered() -> None:
    cluster = _cluster()
    cluster.claim("vm", "passthrough", "gpu-t4", 1, node="t4", pod="vm")
    claim = cluster.kube.get(RESOURCE_CLAIMS, "passthrough", namespace="vm")
    config = {
        "source": "FromClaim",
        "opaque": {
            "driver": "gpu.deckhouse.io",
            "parameters": {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "VFIOConfig"},
        },
    }
    claim["status"]["allocation"]["devices"]["config"] = [config]
    cluster.kube.patch(
        RESOURCE_CLAIMS, "passthrough", {"status": claim["status"]}, subresource="status", namespace="vm"
    )
    name = "a100-0000-10-00-0"
    broken = {
        "status": {
            "conditions": [{"type": "HardwareHealthy", "status": "False", "reason": "NVMLQueryFailed"}]
        }
    }
    cluster.kube.patch(PHYSICAL_GPUS, name, broken, subresource="status")
    cluster.kube.patch(
        PHYSICAL_GPUS,
        "h100-0000-10-00-0",
        {"status": {"currentState": {"driverType": DriverType.VFIO.value}}},
        subresource="status",
    )
    for item in cluster.kube.list(RESOURCE_SLICES).items:
        if item["spec"]["nodeName"] == "a100":
            cluster.kube.delete(RESOURCE_SLICES, item["metadata"]["name"])  # withdrawn, as gpu-handler does
    rows = _rows(cluster)
    assert rows["t4", "0000:10:00.0"].mode == VFIO
    assert rows["h100", "0000:10:00.0"].mode == VFIO  # bound to vfio-pci
    a100 = rows["a100", "0000:10:00.0"]
    assert (a100.healthy, a100.healthy_reason, a100.ready, a100.offered) == (
        "False",
        "NVMLQueryFailed",
        False,
        False,
    )
    assert a100.slices_total is None
    assert a100.share_left is None


def test_slices_left_when_each_half_of_a_card_counts_as_one() -> None:
    """dra.migProfiles 1g.10gb and 3g.40gb: each half of an H100 is one counter of 4
    (counter_layout.grouped); the free slices still come out one by one, from the held devices."""
    cluster = GpuCluster()
    cluster.node("h100", "h100-80gb", 2)
    cluster.publish([MigProfileRule("h100-sxm5-80gb", frozenset({"1g.10gb", "3g.40gb"}))])
    cluster.classes()
    cluster.claim("ml", "small", "gpu-h100-80gb-mig-1g.10gb", 2, node="h100", pod="train")
    cluster.claim("ml", "half", "gpu-h100-80gb-mig-3g.40gb", 1, node="h100", pod="infer")
    rows = _rows(cluster)
    split, idle = (rows["h100", f"0000:{a}:00.0"] for a in ("10", "18"))
    assert sorted((m.profile, m.start) for m in split.mig) == [("1g.10gb", 5), ("1g.10gb", 6), ("3g.40gb", 0)]
    assert (split.slices_free, split.slices_total) == ([4, 7], 8)
    assert (idle.slices_free, idle.slices_total) == (list(range(8)), 8)
