# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DRA publishing: render time for 8 and 16 H100 cards, slices and devices per node, API writes."""

from __future__ import annotations

from typing import Any

from benchmarks.common import line, report, timed
from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES
from deckhouse_gpu.services.events import EventRecorder
from deckhouse_gpu.services.slice_publisher import PublisherSettings, SlicePublisher
from testkit.gpu_objects import node_cards


def run() -> None:
    print("DRA publishing (H100 80GB: Physical + 25 MIG offers per card)")
    for count in (8, 16):
        cards = node_cards("bench", "h100-80gb", count)
        for minor in (34, 35):

            def once(cards: list[dict[str, Any]] = cards, minor: int = minor) -> list[dict[str, Any]]:
                offers = [card_offers(card, OfferPolicy()) for card in cards]
                return render("bench", offers, minor, 1, None)

            slices = once()
            devices = sum(len(s["spec"].get("devices", [])) for s in slices)
            report(f"{count} cards, 1.{minor}: offers + layout + manifests", timed(once, 50))
            line(f"{count} cards, 1.{minor}: slices, devices", len(slices), f"slices, {devices} devices", 0)
        api = MemoryKube()
        api.create(NODES, {"metadata": {"name": "bench"}})
        publisher = SlicePublisher(
            api, "bench", EventRecorder(api, "bench", "bench", SystemClock()), PublisherSettings()
        )
        node = api.get(NODES, "bench")
        first = publisher.publish(cards, node)
        api.calls.clear()
        samples = timed(lambda: publisher.publish(cards, node), 20)  # noqa: B023 - run before the next loop
        line(f"{count} cards: API writes of the first publish", first.writes, "", 0)
        line(f"{count} cards: API writes when nothing changed (20 publishes)", api.writes, "", 0)
        report(f"{count} cards: publish, nothing changed (in-memory API)", samples)
