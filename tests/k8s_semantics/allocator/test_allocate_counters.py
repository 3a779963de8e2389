# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Shared counters through whole allocations: a card and its partitions, counters per slice on
1.34 and per pool on 1.35, and counters charged for a device rejected later (quirk a)
(KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import MIG_CLASSES, V134, V135
from tests.support.allocation import World, claim_object, device, exactly, resource_slice


def card_135(node: str = "n1") -> list[dict[str, object]]:
    """A card as the module publishes it on 1.35: counters in one slice, devices in another."""
    whole = device("card", consumes={"c0": {"memory": "24Gi", "slices": "4"}})
    small = [
        device(f"mig-{i}", kind="mig", consumes={"c0": {"memory": "6Gi", "slices": "1"}}) for i in range(4)
    ]
    return [
        resource_slice("counters", counters={"c0": {"memory": "24Gi", "slices": "4"}}, count=2, node=node),
        resource_slice("devices", [whole, *small], count=2, node=node),
    ]


def card_134() -> list[dict[str, object]]:
    whole = device("card", consumes={"c0": {"memory": "24Gi", "slices": "4"}})
    small = [
        device(f"mig-{i}", kind="mig", consumes={"c0": {"memory": "6Gi", "slices": "1"}}) for i in range(4)
    ]
    return [resource_slice("combined", [whole, *small], counters={"c0": {"memory": "24Gi", "slices": "4"}})]


@pytest.mark.parametrize(("slices", "semantics"), [(card_134(), V134), (card_135(), V135)])
def test_a_whole_card_and_its_partitions_exclude_each_other(
    slices: list[dict[str, object]], semantics: Semantics
) -> None:
    world = World(slices, MIG_CLASSES, semantics)
    assert world.devices(claim_object("m1", exactly("m", "mig"))) == [["mig-0"]]
    assert world.devices(claim_object("whole", exactly("g", "gpu"))) is None
    assert world.devices(claim_object("m2", exactly("m", "mig", count=3))) == [["mig-1", "mig-2", "mig-3"]]
    assert world.devices(claim_object("m3", exactly("m", "mig"))) is None


def test_counters_are_not_checked_without_partitionable_devices_they_just_never_fit() -> None:
    world = World(card_134(), MIG_CLASSES, Semantics("1.34", partitionable=False))
    assert world.devices(claim_object("m", exactly("m", "mig"))) is None


def test_134_counts_counters_per_slice_and_135_per_pool() -> None:
    # Two slices of one pool each declare a set named c0; on 1.34 each slice has its own.
    def two_slices(semantics: Semantics) -> World:
        first = resource_slice(
            "s1", [device("a", consumes={"c0": {"n": "1"}})], counters={"c0": {"n": "1"}}, count=2
        )
        second = resource_slice(
            "s2", [device("b", consumes={"c0": {"n": "1"}})], counters={"c0": {"n": "1"}}, count=2
        )
        return World([first, second], semantics=semantics)

    assert two_slices(V134).devices(claim_object("c", exactly("gpu", count=2))) == [["a", "b"]]
    # 1.35: the same set twice in one pool makes it invalid.
    assert two_slices(V135).allocate(claim_object("c", exactly("gpu"))).error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: duplicate counter set c0"
    )


def test_counters_of_a_device_rejected_later_stay_charged_unless_strict() -> None:
    # "card" passes the counter check, then its taint rejects it; the scheduler keeps its counters
    # charged for the rest of the pass, so no MIG device fits in the same pass (quirk a).
    tainted = device(
        "card",
        consumes={"c0": {"memory": "24Gi"}},
        taints=[{"key": "maint", "value": "", "effect": "NoSchedule"}],
    )
    mig = device("mig-0", kind="gpu", consumes={"c0": {"memory": "6Gi"}})
    slices = [resource_slice("s", [tainted, mig], counters={"c0": {"memory": "24Gi"}})]
    assert World(slices, semantics=V134).devices(claim_object("c", exactly("gpu"))) is None
    strict = Semantics("1.34", strict=True)
    assert World(slices, semantics=strict).devices(claim_object("c", exactly("gpu"))) == [["mig-0"]]
