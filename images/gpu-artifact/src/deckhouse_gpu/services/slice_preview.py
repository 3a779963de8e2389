# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ResourceSlices for given PhysicalGPUs, computed offline (``gpu-handler render-slices``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from deckhouse_gpu.domain.offers.model import CardOffers
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.domain.offers.vfio_offers import offered
from deckhouse_gpu.services.slice_publisher import node_policy


def render_nodes(
    cards: list[dict[str, Any]],
    minor: int,
    node_labels: dict[str, str],
    partitionable: bool,
    consumable: bool,
) -> list[dict[str, Any]]:
    """Every node's pool at generation 1, nodes in name order; cards that may not be offered are left out."""
    policy = node_policy({"metadata": {"labels": node_labels}}, partitionable, consumable)
    by_node: dict[str, list[CardOffers]] = defaultdict(list)
    for card in cards:
        node = ((card.get("status") or {}).get("nodeInfo") or {}).get("nodeName")
        # Nothing is prepared offline: a card on vfio-pci is an administrator's (VFIO claims only).
        if node and (offers := offered(card, policy)) is not None:
            by_node[node].append(offers)
    slices: list[dict[str, Any]] = []
    for node, node_offers in sorted(by_node.items()):
        slices += render(node, node_offers, minor, 1, None)
    return slices
