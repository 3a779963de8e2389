# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers of cards on vfio-pci (DESIGN.md D7, docs/VFIO.md), which NVML cannot see.

Two cases. A card that a VFIO claim of this driver holds keeps its whole-card offer, exactly as it
was allocated (``deviceType: Physical``, the same counters), while its MIG offers stay withdrawn:
the allocation stays valid and the scheduler keeps counting the card as taken. A card that an
administrator bound to vfio-pci before the module ran can serve nothing but a virtual machine: it
gets one exclusive offer with ``deviceType: VFIO``, which DeviceClasses of Physical cards do not
select, described from what needs no NVML (the model from the PCI ids, through the node agent's
labels, and the capabilities the handler read when the card was last on nvidia, if ever).
"""

from __future__ import annotations

from typing import Any, Literal

from deckhouse_gpu.domain.inventory.physicalgpu import LABEL_DEVICE, LABEL_VENDOR, DriverType
from deckhouse_gpu.domain.naming import physical_name
from deckhouse_gpu.domain.offers.card_offers import (
    ActiveMode,
    attribute_text,
    card_facts,
    card_offers,
    counter_set,
    eligible,
)
from deckhouse_gpu.domain.offers.model import (
    PHYSICAL,
    STANDARD_DOMAIN,
    AttributeValue,
    Capacity,
    CardOffers,
    Offer,
    OfferPolicy,
    mebibytes,
)

VFIO: Literal["VFIO"] = "VFIO"


def _address(card: dict[str, Any]) -> str | None:
    address = ((card.get("status") or {}).get("pciInfo") or {}).get("address")
    return str(address) if address else None


def on_vfio(card: dict[str, Any]) -> bool:
    """The node agent found the card bound to vfio-pci."""
    current = (card.get("status") or {}).get("currentState") or {}
    return current.get("driverType") == DriverType.VFIO.value and _address(card) is not None


def _attributes(card: dict[str, Any], address: str, device_type: str) -> dict[str, AttributeValue]:
    labels = (card.get("metadata") or {}).get("labels") or {}
    status = card.get("status") or {}
    pci = status.get("pciInfo") or {}
    caps = status.get("capabilities") or {}
    nvidia_caps = caps.get("nvidia") or {}
    state = (status.get("currentState") or {}).get("nvidia") or {}  # gone once the card left nvidia
    product = caps.get("productName") or (pci.get("device") or {}).get("name")
    attributes: dict[str, AttributeValue] = {
        "vendor": attribute_text(labels.get(LABEL_VENDOR, "nvidia")),
        "device": attribute_text(labels.get(LABEL_DEVICE, "")),
        "pciAddress": address,
        "deviceType": device_type,
        f"{STANDARD_DOMAIN}/pciBusID": address,
    }
    identity = {"productName": product, "uuid": state.get("gpuUUID")}
    attributes.update({key: attribute_text(value) for key, value in identity.items() if value})
    attributes.update(card_facts(state, nvidia_caps, pci))
    return attributes


def _memory(card: dict[str, Any]) -> dict[str, Capacity]:
    memory = ((card.get("status") or {}).get("capabilities") or {}).get("memoryMiB")
    return {"memory": Capacity(mebibytes(memory))} if type(memory) is int and memory > 0 else {}


def vfio_card_offers(card: dict[str, Any], policy: OfferPolicy, active: ActiveMode) -> CardOffers | None:
    """The offer of a card NVML does not serve: held by a VFIO claim, or bound to vfio-pci by an
    administrator; None for any other card that is not eligible."""
    address = _address(card)
    if address is None:
        return None
    name = physical_name(address)
    if active == VFIO:
        counters = None
        if policy.partitionable and policy.mig and not (policy.sharing and policy.consumable):
            counters = counter_set(card, policy) if _memory(card) else None
        consumes = dict(counters.counters) if counters else {}
        attributes = _attributes(card, address, PHYSICAL)
        offer = Offer(name, address, PHYSICAL, attributes, _memory(card), consumes)
        return CardOffers(address, counters, [offer])
    if active is None and on_vfio(card):
        offer = Offer(name, address, PHYSICAL, _attributes(card, address, VFIO), _memory(card))
        return CardOffers(address, None, [offer])
    return None


def offered(card: dict[str, Any], policy: OfferPolicy, active: ActiveMode = None) -> CardOffers | None:
    """What a card of the node offers now, whatever its driver; None when it offers nothing."""
    if eligible(card):
        return card_offers(card, policy, active)
    return vfio_card_offers(card, policy, active)
