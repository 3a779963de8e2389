# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The inventory gauges gpu-controller exports, computed from the PhysicalGPUs alone.

They are rendered afresh from the current objects at each scrape, so a deleted card leaves no
stale series behind. Conditions follow kube-state-metrics: one series per possible status,
1 for the current one and 0 for the others; a condition nobody has set yet counts as unknown,
so an alert on "not true" also catches a card that no component has judged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.conditions import find
from deckhouse_gpu.domain.inventory.driver_ready import card_node
from deckhouse_gpu.domain.inventory.physicalgpu import (
    DRIVER_READY,
    HARDWARE_HEALTHY,
    LABEL_DEVICE,
    LABEL_VENDOR,
)

EXPORTED_CONDITIONS = (DRIVER_READY, HARDWARE_HEALTHY)
STATUSES = ("true", "false", "unknown")
NO_DRIVER = "None"
UNKNOWN = "unknown"

Object = dict[str, Any]


@dataclass(frozen=True, order=True)
class CardGroup:
    node: str
    vendor: str
    model: str
    driver_type: str


@dataclass(frozen=True, order=True)
class ConditionSample:
    physicalgpu: str
    node: str
    condition: str
    status: str
    value: float


def group_of(card: Object) -> CardGroup:
    labels = (card.get("metadata") or {}).get("labels") or {}
    current = (card.get("status") or {}).get("currentState") or {}
    return CardGroup(
        node=card_node(card) or UNKNOWN,
        vendor=str(labels.get(LABEL_VENDOR) or UNKNOWN),
        model=str(labels.get(LABEL_DEVICE) or UNKNOWN),
        driver_type=str(current.get("driverType") or NO_DRIVER),
    )


def card_counts(cards: Iterable[Object]) -> list[tuple[CardGroup, int]]:
    return sorted(Counter(group_of(card) for card in cards).items())


def condition_samples(cards: Iterable[Object]) -> list[ConditionSample]:
    samples: list[ConditionSample] = []
    for card in cards:
        name = str((card.get("metadata") or {}).get("name") or "")
        node = card_node(card) or UNKNOWN
        conditions = (card.get("status") or {}).get("conditions")
        for kind in EXPORTED_CONDITIONS:
            condition = find(conditions, kind)
            current = str(condition.get("status", UNKNOWN)).lower() if condition else UNKNOWN
            current = current if current in STATUSES else UNKNOWN
            samples += [
                ConditionSample(name, node, kind, status, 1.0 if status == current else 0.0)
                for status in STATUSES
            ]
    return sorted(samples)
