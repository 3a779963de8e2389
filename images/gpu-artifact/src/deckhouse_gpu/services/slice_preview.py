# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ResourceSlices for given PhysicalGPUs, computed offline (``gpu-handler render-slices``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from deckhouse_gpu.domain.offers.card_offers import card_offers, eligible
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.services.slice_publisher import node_policy


def render_nodes(
    cards: list[dict[str, Any]],
    minor: int,
    node_labels: dict[str, str],
    partitionable: bool,
    consumable: bool,
) -> list[dict[str, Any]]:
    """Every node's pool at generation 1, nodes in name order; cards that may not be offered are left out."""
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for card in cards:
        node = ((card.get("status") or {}).get("nodeInfo") or {}).get("nodeName")
        if node and eligible(card):
            by_node[node].append(card)
    policy = node_policy({"metadata": {"labels": node_labels}}, partitionable, consumable)
    slices: list[dict[str, Any]] = []
    for node, node_cards in sorted(by_node.items()):
        slices += render(node, [card_offers(card, policy) for card in node_cards], minor, 1, None)
    return slices
