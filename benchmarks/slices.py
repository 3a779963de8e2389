# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DRA publishing: devices and counters per node for each model and counter layout; render time for
8 and 16 H100 cards, slices and devices per node, API writes."""

from __future__ import annotations

from typing import Any

from benchmarks.common import line, report, timed
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards

# (name, policy) of the layouts compared: the full counter layout of before, the reduced one
# published now (domain/offers/counter_layout.py), and a MIG profile policy keeping three profiles.
LAYOUTS: tuple[tuple[str, OfferPolicy], ...] = (
    ("full", OfferPolicy(counters="full")),
    ("reduced", OfferPolicy()),
)
RESTRICTED = {
    "a30": ("1g.6gb", "2g.12gb", "4g.24gb"),
    "a100-40gb": ("1g.5gb", "3g.20gb", "7g.40gb"),
    "a100-80gb": ("1g.10gb", "3g.40gb", "7g.80gb"),
    "h100-80gb": ("1g.10gb", "3g.40gb", "7g.80gb"),
}


def per_node(model: str) -> None:
    """Per node of 8 cards: devices, counters in the counter sets, and counters consumed summed
    over the devices (what the scheduler adds up for every device it looks at)."""
    cards = node_cards("bench", model, 8)
    device = cards[0]["metadata"]["labels"]["gpu.deckhouse.io/device"]
    layouts = list(LAYOUTS)
    if model in RESTRICTED:
        restricted = ((device, frozenset(RESTRICTED[model])),)
        # Before and with the runs of slices counted as one (counter_layout.grouped, published).
        layouts.append(("3 profiles", OfferPolicy(mig_profiles=restricted, counters="reduced")))
        layouts.append(("3p grouped", OfferPolicy(mig_profiles=restricted)))
    if model == "h100-80gb":  # a typical class set: whole cards, 1g.10gb and 3g.40gb
        typical = ((device, frozenset(("1g.10gb", "3g.40gb"))),)
        layouts.append(("typical", OfferPolicy(mig_profiles=typical, counters="reduced")))
        layouts.append(("typ grouped", OfferPolicy(mig_profiles=typical)))
    for name, policy in layouts:
        offers = [card_offers(card, policy) for card in cards]
        devices = sum(len(card.offers) for card in offers)
        counters = sum(len(card.counter_set.counters) for card in offers if card.counter_set)
        consumed = sum(len(offer.consumes) for card in offers for offer in card.offers)
        print(
            f"  {model:<10} {name:<11} {devices:5d} devices  {counters:4d} counters"
            f"  {consumed:5d} consumed (per device {consumed / devices:4.1f})"
        )


def run() -> None:
    print("Devices and counters per node (8 cards of a model)")
    for model in ("a30", "a100-40gb", "a100-80gb", "h100-80gb", "l40s", "t4"):
        per_node(model)
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
