# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Lays a node's offers out into ResourceSlices for the API server's version (DESIGN.md D3).

1.34: a slice per card holding its counter set and its devices (references stay in the slice).
1.35+: counters-only slices (at most 8 sets each) and devices slices (at most 64 devices when
they consume counters or have taints, 128 otherwise), all in one pool with one generation. 1.36
and 1.37 keep the 1.35 rules (KUBERNETES-FACTS.md F10); a newer minor is treated as 1.37
(k8s_semantics/versions.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import LABEL_NODE
from deckhouse_gpu.domain.naming import label_value, pci_address_slug, physical_name
from deckhouse_gpu.domain.offers.device_taints import taint_json
from deckhouse_gpu.domain.offers.model import DRIVER, CardOffers, CounterSet, Offer
from deckhouse_gpu.k8s_semantics.versions import known_minor

API_VERSION = "resource.k8s.io/v1"
MAX_DEVICES = 128
MAX_DEVICES_WITH_COUNTERS = 64  # 1.35 to 1.37
MAX_COUNTER_SETS = 8  # 1.35 to 1.37
MAX_NAME = 253


class LayoutError(ValueError):
    """The offers cannot be laid out within the API's limits (a card would need a split set)."""


@dataclass(frozen=True)
class SliceContent:
    name: str
    counter_sets: tuple[CounterSet, ...] = ()
    devices: tuple[Offer, ...] = ()


def pool_name(node: str) -> str:
    name = f"gpus/{node}"
    return name if len(name) <= MAX_NAME else f"gpus/{label_value(node)}"


def _slice_name(node: str, suffix: str) -> str:
    name = f"{node}-{DRIVER.replace('.', '-')}-{suffix}"
    if len(name) <= MAX_NAME:
        return name
    return f"{label_value(node)}-{DRIVER.replace('.', '-')}-{suffix}"


def layout(node: str, cards: Iterable[CardOffers], minor: int) -> list[SliceContent]:
    """The slices of a node's pool for the API server's minor version (UnknownVersion below 1.34)."""
    cards = sorted(cards, key=lambda card: card.address)
    if known_minor(minor) == 34:
        return [_card_slice(node, card) for card in cards if card.offers or card.counter_set]
    sets = [card.counter_set for card in cards if card.counter_set is not None]
    slices = [
        SliceContent(_slice_name(node, f"counters-{index}"), tuple(sets[start : start + MAX_COUNTER_SETS]))
        for index, start in enumerate(range(0, len(sets), MAX_COUNTER_SETS))
    ]
    partitioned = [[offer for offer in card.offers if offer.consumes] for card in cards]
    plain = [[offer for offer in card.offers if not offer.consumes] for card in cards]
    slices += _pack(node, "partitionable", partitioned, MAX_DEVICES_WITH_COUNTERS)
    slices += _pack(node, "devices", plain, MAX_DEVICES)
    return slices


def _card_slice(node: str, card: CardOffers) -> SliceContent:
    if len(card.offers) > MAX_DEVICES:
        raise LayoutError(
            f"card {card.address} has {len(card.offers)} offers; one 1.34 slice holds {MAX_DEVICES}"
        )
    sets = (card.counter_set,) if card.counter_set else ()
    return SliceContent(_slice_name(node, pci_address_slug(card.address)), sets, tuple(card.offers))


def _pack(node: str, kind: str, groups: list[list[Offer]], size: int) -> list[SliceContent]:
    """Whole cards per slice while they fit, so a change to one card rewrites few devices;
    a card larger than a slice is split."""
    batches: list[list[Offer]] = []
    for group in (g for g in groups if g):
        if batches and len(batches[-1]) + len(group) <= _limit(size, [*batches[-1], *group]):
            batches[-1].extend(group)
            continue
        step = _limit(size, group)
        batches.extend(list(group[start : start + step]) for start in range(0, len(group), step))
    return [
        SliceContent(_slice_name(node, f"{kind}-{index}"), devices=tuple(batch))
        for index, batch in enumerate(batches)
    ]


def _limit(size: int, offers: list[Offer]) -> int:
    """A slice where any device has taints holds at most 64 devices, as with counters (1.35+)."""
    return min(size, MAX_DEVICES_WITH_COUNTERS) if any(offer.taints for offer in offers) else size


def device_json(offer: Offer) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for key, value in offer.attributes.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        attributes[key] = {kind: value}
    capacity: dict[str, Any] = {}
    for key, entry in offer.capacity.items():
        capacity[key] = {"value": entry.value}
        if entry.policy is not None:
            policy = entry.policy
            capacity[key]["requestPolicy"] = {
                "default": policy.default,
                "validRange": {"min": policy.min, "max": policy.max, "step": policy.step},
            }
    device: dict[str, Any] = {"name": offer.name, "attributes": attributes, "capacity": capacity}
    if offer.consumes:
        device["consumesCounters"] = [
            {"counterSet": physical_name(offer.card), "counters": _counters(offer.consumes)}
        ]
    if offer.shared:
        device["allowMultipleAllocations"] = True
    if offer.taints:
        device["taints"] = [taint_json(taint) for taint in offer.taints]
    return device


def _counters(values: dict[str, str]) -> dict[str, Any]:
    return {name: {"value": value} for name, value in values.items()}


def slice_manifest(
    node: str, content: SliceContent, generation: int, count: int, owner: dict[str, Any] | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool_name(node), "generation": generation, "resourceSliceCount": count},
        "nodeName": node,
    }
    # 1.35 rejects a slice where both keys are present, even empty: send only what is there.
    if content.counter_sets:
        spec["sharedCounters"] = [
            {"name": s.name, "counters": _counters(s.counters)} for s in content.counter_sets
        ]
    if content.devices:
        spec["devices"] = [device_json(offer) for offer in content.devices]
    metadata: dict[str, Any] = {"name": content.name, "labels": {LABEL_NODE: label_value(node)}}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": metadata, "spec": spec}


def render(
    node: str, cards: Iterable[CardOffers], minor: int, generation: int, owner: dict[str, Any] | None
) -> list[dict[str, Any]]:
    contents = layout(node, cards, minor)
    return [slice_manifest(node, content, generation, len(contents), owner) for content in contents]
