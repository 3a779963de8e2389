# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The attributes gpu-handler publishes for one device in its ResourceSlice, in the slice's form.

They are rendered by the same code that publishes them (domain/offers/card_offers.py and the
slice encoding of domain/offers/slice_layout.py), never derived a second time, so what a workload
reads about its device (domain/prepare/container/device_metadata.py) is what the scheduler selected it by.
Attributes do not depend on the node's offer policy; the default policy renders every offer a card
can have (Physical and each MIG placement), so the allocated one is among them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import device_json
from deckhouse_gpu.domain.offers.vfio_offers import vfio_card_offers

_EVERY_OFFER = OfferPolicy()  # MIG and partitionable on, not shared: Physical and MIG offers


def describable(card: Mapping[str, Any]) -> bool:
    """Whether the card's status holds what its offers are rendered from. A prepared card may have
    lost a condition since (its offers are withdrawn then), but not its description."""
    status = card.get("status") or {}
    nvidia = (status.get("currentState") or {}).get("nvidia") or {}
    return (
        bool(nvidia.get("gpuUUID"))
        and bool((status.get("capabilities") or {}).get("memoryMiB"))
        and bool((status.get("pciInfo") or {}).get("address"))
    )


def published_attributes(card: Mapping[str, Any], device: str) -> dict[str, Any] | None:
    """``device``'s attributes as its ResourceSlice entry carries them (``{"int": 8}``,
    ``{"string": "..."}``); None when the card cannot be described or has no such offer. A card on
    vfio-pci, which NVML cannot describe, has the offer of domain/offers/vfio_offers.py."""
    if describable(card):
        offers = card_offers(dict(card), _EVERY_OFFER).offers
    else:
        found = vfio_card_offers(dict(card), _EVERY_OFFER, None)
        offers = found.offers if found is not None else []
    for offer in offers:
        if offer.name == device:
            attributes: dict[str, Any] = device_json(offer)["attributes"]
            return attributes
    return None
