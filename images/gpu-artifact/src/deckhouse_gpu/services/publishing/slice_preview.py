# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ResourceSlices for given PhysicalGPUs, computed offline (``gpu-handler render-slices``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from deckhouse_gpu.domain.offers.device_taints import card_offers_with_health
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from deckhouse_gpu.domain.offers.model import CardOffers
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.services.publishing.slice_publisher import MigOffers, node_policy


def render_nodes(
    cards: list[dict[str, Any]],
    minor: int,
    node_labels: dict[str, str],
    partitionable: bool,
    consumable: bool,
    taints: bool = True,
    mig_profiles: Sequence[MigProfileRule] = (),
    mig_offers: MigOffers = "AllNodes",
) -> list[dict[str, Any]]:
    """Every node's pool at generation 1, nodes in name order; cards that may not be offered are left
    out, and unhealthy ones are tainted (``taints``) or left out too."""
    labels = {"metadata": {"labels": node_labels}}
    policy = node_policy(labels, partitionable, consumable, mig_profiles, mig_offers)
    by_node: dict[str, list[CardOffers]] = defaultdict(list)
    for card in cards:
        node = ((card.get("status") or {}).get("nodeInfo") or {}).get("nodeName")
        # Nothing is prepared offline: a card on vfio-pci is an administrator's (VFIO claims only).
        if node and (offers := card_offers_with_health(card, policy, None, taints)) is not None:
            by_node[node].append(offers)
    slices: list[dict[str, Any]] = []
    for node, node_offers in sorted(by_node.items()):
        slices += render(node, node_offers, minor, 1, None)
    return slices
