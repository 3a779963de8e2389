# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Builds a card's offers and counter set from its PhysicalGPU (DESIGN.md S7.2/S7.3, D2/D6)."""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any, Literal

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.physicalgpu import (
    DRIVER_READY,
    HARDWARE_HEALTHY,
    LABEL_DEVICE,
    LABEL_VENDOR,
    DriverType,
)
from deckhouse_gpu.domain.naming import mig_name, physical_name
from deckhouse_gpu.domain.offers.counter_layout import (
    SLICE,
    Placed,
    full_capacity,
    grouped,
    needed,
    profile_uses,
    quantity,
    slice_uses,
)
from deckhouse_gpu.domain.offers.model import (
    MIG,
    PHYSICAL,
    STANDARD_DOMAIN,
    AttributeValue,
    Capacity,
    CardOffers,
    CounterSet,
    Offer,
    OfferPolicy,
    RequestPolicy,
    mebibytes,
)
from deckhouse_gpu.domain.offers.placement_order import Placement, packing_order

EVERY_PROFILE = OfferPolicy()
# "VFIO": a whole card passed to a virtual machine (DESIGN.md D7); it keeps its Physical offer only.
ActiveMode = Literal["Physical", "MIG", "VFIO"] | None
MAX_ATTRIBUTE_BYTES = 64


def eligible(card: dict[str, Any], *, healthy: bool = True) -> bool:
    """Only cards whose driver is ready, that are healthy, bound to nvidia and fully described;
    ``healthy=False`` leaves health out (an unhealthy card's offers are tainted, device_taints.py)."""
    status = card.get("status") or {}
    found = status.get("conditions")
    current = status.get("currentState") or {}
    return (
        conditions.is_true(found, DRIVER_READY)
        and (not healthy or conditions.is_true(found, HARDWARE_HEALTHY))
        and current.get("driverType") == DriverType.NVIDIA.value
        and bool((current.get("nvidia") or {}).get("gpuUUID"))
        and bool((status.get("capabilities") or {}).get("memoryMiB"))
        and bool((status.get("pciInfo") or {}).get("address"))
    )


def attribute_text(value: Any) -> str:
    """Attribute strings are limited to 64 bytes; longer texts are cut at a character boundary."""
    data = str(value).encode()[:MAX_ATTRIBUTE_BYTES]
    return data.decode(errors="ignore")


def _common_attributes(card: dict[str, Any]) -> dict[str, AttributeValue]:
    labels = card.get("metadata", {}).get("labels") or {}
    status = card["status"]
    caps, nvidia_caps = status["capabilities"], status["capabilities"].get("nvidia") or {}
    # A card a VFIO claim holds has no nvidia state, yet its counters are still worked out from
    # the MIG offers the DeviceClasses may select (vfio_offers.py): those never ask for a uuid.
    state = (status.get("currentState") or {}).get("nvidia") or {}
    attributes: dict[str, AttributeValue] = {
        "vendor": attribute_text(labels.get(LABEL_VENDOR, "nvidia")),
        "device": attribute_text(labels.get(LABEL_DEVICE, "")),
        "productName": attribute_text(caps.get("productName", "")),
        "pciAddress": status["pciInfo"]["address"],
    }
    if state.get("gpuUUID"):
        attributes["uuid"] = attribute_text(state["gpuUUID"])
    attributes.update(card_facts(state, nvidia_caps, status["pciInfo"]))
    return attributes


def card_facts(
    state: Mapping[str, Any], nvidia_caps: Mapping[str, Any], pci: Mapping[str, Any]
) -> dict[str, AttributeValue]:
    """What every offer of a card says of its driver and place in the machine, as far as known:
    driver and CUDA versions, architecture, compute capability, PCIe root and NUMA node."""
    optional = {
        "driverVersion": state.get("driverVersion"),
        "cudaVersion": state.get("cudaVersion"),
        "architecture": nvidia_caps.get("productArchitecture"),
    }
    facts: dict[str, AttributeValue] = {
        key: attribute_text(value) for key, value in optional.items() if value
    }
    major, _, minor = str(nvidia_caps.get("computeCap", "")).partition(".")
    if major.isdigit() and minor.isdigit():
        facts["ccMajor"], facts["ccMinor"] = int(major), int(minor)
    if pci.get("pcieRoot"):
        facts[f"{STANDARD_DOMAIN}/pcieRoot"] = attribute_text(pci["pcieRoot"])
    numa = pci.get("numaNode")
    # The standard attribute of KEP-6072 (KUBERNETES-FACTS.md F10), an int; left out when unknown: the
    # kernel's -1 never reaches the PhysicalGPU, and nothing negative is a NUMA node.
    if type(numa) is int and numa >= 0:
        facts[f"{STANDARD_DOMAIN}/numaNode"] = numa
    return facts


def offered_profiles(card: dict[str, Any], policy: OfferPolicy) -> list[dict[str, Any]]:
    """The card's MIG profiles that the policy offers (ModuleConfig dra.migProfiles), in NVML's order."""
    mig = ((card["status"]["capabilities"].get("nvidia") or {}).get("mig")) or {}
    device = (card.get("metadata", {}).get("labels") or {}).get(LABEL_DEVICE, "")
    allowed = policy.offered_profiles(device)
    return [p for p in mig.get("profiles") or [] if allowed is None or p.get("name") in allowed]


def counter_set(card: dict[str, Any], policy: OfferPolicy = EVERY_PROFILE) -> CounterSet | None:
    """The card's shared counters; None for a card without MIG offers (no empty sets, DESIGN.md
    S7.5, KUBERNETES-FACTS.md F1.2). Only the counters that change what fits
    (domain/offers/counter_layout.py)."""
    status = card["status"]
    mig = ((status["capabilities"].get("nvidia") or {}).get("mig")) or {}
    kept = offered_placements(card, policy)
    if not kept or not mig.get("totalSlices"):
        return None
    # Values from all the card's profiles: what the driver allows does not depend on what is offered.
    memory, slices = int(status["capabilities"]["memoryMiB"]), int(mig["totalSlices"])
    capacity = full_capacity(memory, slices, mig["profiles"])
    names = list(capacity)
    if policy.counters != "full":
        placed = [placed for _, placed in _placements(kept, capacity)]
        names = needed(capacity, placed, dominated=policy.counters == "minimal")
        if policy.counters == "grouped":
            runs = grouped([name for name in names if name.startswith(SLICE)], placed)
            capacity.update({name: len(run) for name, run in runs.items()})
            names = [*runs, *(name for name in names if not name.startswith(SLICE))]
    return CounterSet(
        physical_name(status["pciInfo"]["address"]), {name: quantity(name, capacity[name]) for name in names}
    )


def offered_placements(card: dict[str, Any], policy: OfferPolicy) -> list[Placement]:
    """The MIG placements the card offers, in the order the scheduler should try them: those of
    the profiles dra.migProfiles offers that some DeviceClass may select (policy.demand), in the
    packing order of domain/offers/placement_order.py."""
    candidates = [
        Placement(profile, int(placement["start"]), int(placement["size"]))
        for profile in offered_profiles(card, policy)
        for placement in profile.get("placements") or []
    ]
    demand = policy.demand
    if demand is not None and candidates:
        common = _common_attributes(card)
        candidates = [p for p in candidates if demand.may_select(_mig_offer(card, p, {}, common))]
    return packing_order(candidates)


def _placements(kept: list[Placement], counters: Container[str]) -> list[tuple[Placement, Placed]]:
    return [(p, Placed(p.start, p.size, profile_uses(p.profile, counters))) for p in kept]


def _mig_offer(
    card: dict[str, Any], placement: Placement, consumes: dict[str, str], common: dict[str, AttributeValue]
) -> Offer:
    address = card["status"]["pciInfo"]["address"]
    profile, start = placement.profile, placement.start
    attributes = {
        **common,
        "deviceType": MIG,
        "migProfile": attribute_text(profile["name"]),
        "migProfileID": int(profile["profileID"]),
        "migPlacementStart": start,
        "migPlacementSize": placement.size,
    }
    capacity = {"memory": Capacity(mebibytes(int(profile["memoryMiB"])))}
    return Offer(mig_name(address, profile["name"], start), address, MIG, attributes, capacity, consumes)


def _mig_offers(
    card: dict[str, Any], policy: OfferPolicy, counters: CounterSet, common: dict[str, AttributeValue]
) -> list[Offer]:
    kept = counters.counters
    offers = []
    for placement, placed in _placements(offered_placements(card, policy), kept):
        consumes = {name: quantity(name, value) for name, value in placed.uses}
        consumes.update({name: str(amount) for name, amount in slice_uses(kept, placed).items()})
        offers.append(_mig_offer(card, placement, consumes, common))
    return offers


def _physical_offer(
    card: dict[str, Any], counters: CounterSet | None, shared: bool, common: dict[str, AttributeValue]
) -> Offer:
    address = card["status"]["pciInfo"]["address"]
    memory = mebibytes(int(card["status"]["capabilities"]["memoryMiB"]))
    attributes = {**common, "deviceType": PHYSICAL, f"{STANDARD_DOMAIN}/pciBusID": address}
    if shared:
        # A claim that asks for nothing gets the whole card (sharePercent 100), so sharing is opt-in
        # per claim; memory is a budget that MPS can enforce and time-slicing only accounts.
        capacity = {
            "memory": Capacity(
                memory, RequestPolicy(default=mebibytes(0), min=mebibytes(0), max=memory, step=mebibytes(1))
            ),
            "sharePercent": Capacity("100", RequestPolicy(default="100", min="1", max="100", step="1")),
        }
        return Offer(physical_name(address), address, PHYSICAL, attributes, capacity, shared=True)
    consumes = dict(counters.counters) if counters else {}
    return Offer(
        physical_name(address), address, PHYSICAL, attributes, {"memory": Capacity(memory)}, consumes
    )


def card_offers(card: dict[str, Any], policy: OfferPolicy, active: ActiveMode = None) -> CardOffers:
    """Offers of one eligible card in the scheduler's first-fit order: the whole card, then the MIG
    placements in packing order (domain/offers/placement_order.py); offers conflicting with
    ``active``, and those no DeviceClass may select (policy.demand), are left out."""
    address = card["status"]["pciInfo"]["address"]
    common = _common_attributes(card)
    shared = policy.sharing and policy.consumable
    # Counters exist for MIG: without MIG offers they would only cost the 64-device limit.
    counters = counter_set(card, policy) if policy.partitionable and policy.mig and not shared else None
    offers: list[Offer] = []
    if active != MIG:
        whole = _physical_offer(card, counters, shared, common)
        if policy.demand is None or policy.demand.may_select(whole):
            offers.append(whole)
    if counters is not None and active not in (PHYSICAL, "VFIO"):
        offers.extend(_mig_offers(card, policy, counters, common))
    used = counters if any(offer.consumes for offer in offers) else None
    return CardOffers(address, used, offers)
