# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers of cards on vfio-pci: a card a VFIO claim holds keeps its whole-card offer, an
administrator's vfio-pci card is offered for VFIO claims only, without NVML."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import device_json, render
from deckhouse_gpu.domain.offers.vfio_offers import offered, on_vfio, vfio_card_offers
from deckhouse_gpu.domain.prepare.active_modes import active_modes
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.container.published_attributes import published_attributes
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from testkit.gpu_objects import ready_card

A100 = "0000:3b:00.0"
NAME = "gpu-0000-3b-00-0"


def on_vfio_pci(card: dict[str, Any], known_before: bool = True) -> dict[str, Any]:
    """The card as its PhysicalGPU reads once the agent saw vfio-pci and the handler gated it."""
    status = card["status"]
    status["currentState"] = {"driverType": "VFIO", "driverName": "vfio-pci"}
    status["conditions"][1].update(status="Unknown", reason="DriverTypeNotNvidia")
    status["pciInfo"]["device"] = {"id": "20f1", "name": "GA100 [A100 PCIe 40GB]"}
    if not known_before:
        del status["capabilities"]  # never on nvidia while the module ran
    return card


def test_a_card_held_by_a_vfio_claim_keeps_its_whole_card_offer_and_no_mig_offers():
    before = card_offers(ready_card("w1", A100, "a100-40gb"), OfferPolicy())
    while_held = card_offers(ready_card("w1", A100, "a100-40gb"), OfferPolicy(), "VFIO")
    assert [o.name for o in while_held.offers] == [NAME]
    assert while_held.offers[0] == before.offers[0]  # on nvidia still (just bound): unchanged
    bound = offered(on_vfio_pci(ready_card("w1", A100, "a100-40gb")), OfferPolicy(), "VFIO")
    assert bound is not None
    assert [o.name for o in bound.offers] == [NAME]
    offer = bound.offers[0]
    assert offer.attributes["deviceType"] == "Physical"  # as it was allocated
    assert offer.consumes == before.offers[0].consumes  # the scheduler keeps counting the card taken
    assert bound.counter_set == before.counter_set
    assert offer.attributes["resource.kubernetes.io/pciBusID"] == A100
    assert "uuid" not in offer.attributes  # NVML no longer reads it: nothing stale is published


def test_a_vfio_held_card_keeps_its_counters_where_device_classes_decide_the_offers():
    """Found by chaos-real: with DeviceClasses in the cluster (D19) a VFIO-held card whose
    PhysicalGPU had lost its nvidia state broke every publishing pass of its node (KeyError)."""
    ours = 'device.driver == "gpu.deckhouse.io" && device.attributes["gpu.deckhouse.io"]'
    whole, small = f'{ours}.deviceType == "Physical"', f'{ours}.migProfile == "1g.5gb"'
    classes = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
         "spec": {"selectors": [{"cel": {"expression": expression}}]}}
        for name, expression in (("whole", whole), ("small", small))
    ]  # fmt: skip
    policy = OfferPolicy(demand=demand_of(classes))
    before = card_offers(ready_card("w1", A100, "a100-40gb"), policy)
    assert before.counter_set is not None  # the MIG offers a class selects are counted
    bound = offered(on_vfio_pci(ready_card("w1", A100, "a100-40gb")), policy, "VFIO")
    assert bound is not None
    assert [o.name for o in bound.offers] == [NAME]
    assert bound.counter_set == before.counter_set
    assert bound.offers[0].consumes == before.offers[0].consumes


def test_an_administrators_vfio_card_is_offered_for_vfio_claims_only_without_nvml():
    card = on_vfio_pci(ready_card("w1", A100, "a100-40gb"), known_before=False)
    assert on_vfio(card)
    found = offered(card, OfferPolicy())
    assert found is not None
    assert found.counter_set is None
    (offer,) = found.offers
    assert not offer.shared
    assert offer.consumes == {}
    attributes = device_json(offer)["attributes"]
    assert attributes["deviceType"] == {"string": "VFIO"}  # Physical classes do not select it
    assert attributes["device"] == {"string": "a100-pcie-40gb"}  # the model, from the PCI ids
    assert attributes["productName"] == {"string": "GA100 [A100 PCIe 40GB]"}
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": A100}
    assert not device_json(offer).get("capacity")  # its memory was never read
    # Exclusive also where the node shares its cards.
    shared = offered(card, OfferPolicy(sharing=True))
    assert shared is not None
    assert not shared.offers[0].shared


@pytest.mark.parametrize("active", ["Physical", "MIG"])
def test_a_card_nvidia_does_not_serve_offers_nothing_else(active):
    assert offered(on_vfio_pci(ready_card("w1", A100, "a100-40gb")), OfferPolicy(), active) is None
    unhealthy = ready_card("w1", A100, "a100-40gb", healthy=False)
    assert offered(unhealthy, OfferPolicy()) is None
    assert vfio_card_offers({"status": {}}, OfferPolicy(), "VFIO") is None


@pytest.mark.parametrize("minor", [34, 35])
def test_the_slices_of_a_node_with_vfio_cards_are_valid(minor):
    held = offered(on_vfio_pci(ready_card("w1", A100, "a100-40gb")), OfferPolicy(), "VFIO")
    admin = offered(on_vfio_pci(ready_card("w1", "0000:5e:00.0", "a30"), False), OfferPolicy())
    other = offered(ready_card("w1", "0000:17:00.0", "a30"), OfferPolicy())
    slices = render("w1", [c for c in (held, admin, other) if c is not None], minor, 1, None)
    assert validate_pool(slices, minor) == []


def test_prepare_reports_vfio_as_the_cards_mode():
    vm = DevicePlan("gpu", "gpus/w1", NAME, A100, "Physical", vfio=True)
    whole = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", "0000:17:00.0", "Physical")
    checkpoint = Checkpoint("b").with_entry(ClaimEntry("u", "ns", "c", "PrepareStarted", (vm, whole)))
    assert active_modes(checkpoint) == {A100: "VFIO", "0000:17:00.0": "Physical"}


def test_device_metadata_of_an_administrators_vfio_card_names_its_pci_bus_id():
    card = on_vfio_pci(ready_card("w1", A100, "a100-40gb"), known_before=False)
    attributes = published_attributes(card, NAME)
    assert attributes is not None
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": A100}  # what KubeVirt reads
    assert published_attributes(card, "gpu-0000-99-00-0") is None
