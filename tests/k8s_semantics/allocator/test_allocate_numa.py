# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``matchAttribute: resource.kubernetes.io/numaNode`` over the offers gpu-handler really publishes
(KUBERNETES-FACTS.md F4.4, F10): a GPU and another driver's NIC end up on one NUMA node, on every version."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from testkit.gpu_objects import ready_card
from tests.support.allocation import World, claim_object, device, device_class, exactly, resource_slice
from tests.support.k8s_versions import MINORS

NUMA = "resource.kubernetes.io/numaNode"
LOW, HIGH = "0000:17:00.0", "0000:b1:00.0"  # the first card in name order, and the second
NIC_DRIVER = "nic.example.com"
OURS, ATTR = 'device.driver == "gpu.deckhouse.io"', 'device.attributes["gpu.deckhouse.io"]'
CLASSES = [
    device_class("gpu-a30", f'{OURS} && {ATTR}.deviceType == "Physical" && {ATTR}.device == "a30-pcie"'),
    device_class(
        "gpu-a30-mig-4g.24gb", f'{OURS} && {ATTR}.deviceType == "MIG" && {ATTR}.migProfile == "4g.24gb"'
    ),
    device_class("nic", f'device.driver == "{NIC_DRIVER}"'),
]
SAME_NUMA = [{"requests": ["gpu", "nic"], "matchAttribute": NUMA}]
VERSIONS = [pytest.param(minor, id=f"1.{minor}") for minor in MINORS]


def world(minor: int, numa: dict[str, int | None], nic_numa: int | None) -> World:
    cards = [ready_card("n1", address, "a30", numa_node=node) for address, node in numa.items()]
    slices = render("n1", [card_offers(card, OfferPolicy()) for card in cards], minor, 1, None)
    nic = device("nic-0", attributes={NUMA: nic_numa} if nic_numa is not None else {})
    slices.append(resource_slice("n1-nics", [nic], driver=NIC_DRIVER, pool="nics/n1"))
    return World(slices, CLASSES, semantics=Semantics(f"1.{minor}"))


def gpu_and_nic(gpu_class: str = "gpu-a30", *, same_numa: bool = True) -> dict[str, Any]:
    """A GPU and a NIC, kept on one NUMA node by a matchAttribute constraint unless ``same_numa`` is off."""
    constraints = {"constraints": SAME_NUMA} if same_numa else {}
    return claim_object("c", exactly("gpu", gpu_class), exactly("nic", "nic"), **constraints)


@pytest.mark.parametrize("minor", VERSIONS)
def test_the_gpu_on_the_nics_numa_node_is_chosen_over_the_first_card(minor: int) -> None:
    assert world(minor, {LOW: 0, HIGH: 1}, 1).devices(gpu_and_nic(same_numa=False), commit=False) == [
        ["gpu-0000-17-00-0", "nic-0"]  # without the constraint: the first card in name order
    ]
    assert world(minor, {LOW: 0, HIGH: 1}, 1).devices(gpu_and_nic()) == [["gpu-0000-b1-00-0", "nic-0"]]
    assert world(minor, {LOW: 0, HIGH: 1}, 0).devices(gpu_and_nic()) == [["gpu-0000-17-00-0", "nic-0"]]


@pytest.mark.parametrize("minor", VERSIONS)
def test_a_mig_instance_is_taken_from_the_card_on_the_nics_numa_node(minor: int) -> None:
    chosen = world(minor, {LOW: 0, HIGH: 1}, 1).devices(gpu_and_nic("gpu-a30-mig-4g.24gb"))
    assert chosen == [["gpu-0000-b1-00-0-mig-4g-24gb-0", "nic-0"]]


@pytest.mark.parametrize("minor", VERSIONS)
def test_a_card_whose_numa_node_is_unknown_never_satisfies_the_constraint(minor: int) -> None:
    # The first card publishes no numaNode (sysfs said -1): the constraint cannot use it.
    assert world(minor, {LOW: None, HIGH: 0}, 0).devices(gpu_and_nic()) == [["gpu-0000-b1-00-0", "nic-0"]]
    assert world(minor, {LOW: None, HIGH: None}, 0).devices(gpu_and_nic()) is None
    assert world(minor, {LOW: 0, HIGH: 1}, None).devices(gpu_and_nic()) is None


@pytest.mark.parametrize("minor", VERSIONS)
def test_no_gpu_on_the_nics_numa_node_means_no_allocation(minor: int) -> None:
    assert world(minor, {LOW: 0, HIGH: 0}, 1).devices(gpu_and_nic()) is None


@pytest.mark.parametrize("minor", VERSIONS)
def test_when_the_card_on_the_nics_numa_node_is_taken_the_claim_waits_rather_than_cross(minor: int) -> None:
    placed = world(minor, {LOW: 1, HIGH: 0}, 1)
    assert placed.devices(claim_object("a", exactly("gpu", "gpu-a30"))) == [["gpu-0000-17-00-0"]]
    assert placed.devices(gpu_and_nic()) is None  # the free card is on NUMA node 0
    assert placed.devices(gpu_and_nic(same_numa=False)) == [["gpu-0000-b1-00-0", "nic-0"]]
