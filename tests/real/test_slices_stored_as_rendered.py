# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every slice gpu-handler renders is stored by the real API server exactly as written.

The publisher compares what it renders with what is stored and writes only on a difference; a
field the server stores in another spelling (a quantity "0Mi" it stores as "0", "24576Mi" as
"24Gi") would make it rewrite the node's slices on every pass, forever. Found by the real tier:
a sharing node's slices were written once a second.
"""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from testkit.gpu_objects import node_cards
from testkit.real_cluster import RealCluster

POLICIES = {
    "mig": OfferPolicy(),
    "sharing": OfferPolicy(sharing=True),
    "whole": OfferPolicy(mig=False),
    "3 profiles": OfferPolicy(mig_profiles=(("a30-pcie", frozenset({"1g.6gb"})),)),
    # The counter layout of issue 32's candidate (docs/DRA.md, Layouts tried): valid as well.
    "minimal counters": OfferPolicy(counters="minimal"),
    # Issue 37's candidate: each half of an H100 and of an A30 counted as one ("memory-slices-0-3",
    # "memory-slices-0-1"), with the profiles of a typical class set.
    "grouped counters": OfferPolicy(
        counters="grouped",
        mig_profiles=(
            ("h100-sxm5-80gb", frozenset({"1g.10gb", "3g.40gb"})),
            ("a30-pcie", frozenset({"1g.6gb", "2g.12gb"})),
        ),
    ),
}
# A30: 24576 MiB, a whole number of GiB; H100: not; T4: no MIG.
MODELS = ("a30", "h100-80gb", "t4")


@pytest.mark.parametrize("layout", sorted(POLICIES))
def test_the_server_stores_our_slices_as_rendered(real_cluster: RealCluster, layout: str) -> None:
    minor = int(real_cluster.version.split(".")[1])
    node = f"stored-{layout.replace(' ', '-')}"
    cards = [card for index, model in enumerate(MODELS) for card in node_cards(f"{node}-{index}", model, 1)]
    slices: list[dict[str, Any]] = []
    for index, card in enumerate(cards):
        slices += render(f"{node}-{index}", [card_offers(card, POLICIES[layout])], minor, 1, None)
    try:
        for item in slices:
            item["metadata"].pop("ownerReferences", None)
            stored = real_cluster.create(item)
            assert stored["spec"] == item["spec"], item["metadata"]["name"]
            assert stored["metadata"]["labels"] == item["metadata"]["labels"]
    finally:
        for item in slices:
            real_cluster.delete("resource.k8s.io/v1", "ResourceSlice", item["metadata"]["name"])
