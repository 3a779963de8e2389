# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The structured allocator on a cluster snapshot: 500 nodes with 8 H100 cards each.

Per layout of the offers (1.35 slices): (a) plain whole cards, no MIG and no counters, the
cheapest the scheduler can get; (b) the full counter layout (memory, memory slices, every engine),
as published before the reduction of domain/offers/counter_layout.py; (c) the reduced layout
published now, every profile offered; (d) the reduced layout with a restricted MIG profile set
(ModuleConfig dra.migProfiles: 1g.10gb, 3g.40gb and 7g.80gb); (e) a control, not a layout the
module publishes: the 208 devices of (c) with every consumesCounters removed and the counters-only
slices dropped (it would let a whole card go out together with its MIG instances), which isolates
the cost of the device count from that of the counters (whole-card claims only). Then the
sharing layout: one shared offer per card. Claims of one device are placed one by one: nodes are
tried in turn from a rotating start, as the scheduler's filter does, and the first node that fits
wins; every allocation is committed before the next claim. Figures, in this process's CPU time
(the best of three rounds), so that other work on the machine does not count: claims per second,
latency per claim (p50/p95), nodes tried per claim, with 0 %, 50 % and 90 % of the cards already
taken, and for whole cards the slowdown against (a). Selector results are cached per device, as in the
long-running controller, so the class's selector is first evaluated once on every device
(reported on its own) and the rows show warm allocation.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from benchmarks.common import line
from deckhouse_gpu.domain.naming import physical_name
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.checks import selectors_match
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import Inventory, build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState
from testkit.gpu_objects import node_cards

NODES = 500
CARDS = 8
CLAIMS = 400
ROUNDS = 3
DRIVER = "gpu.deckhouse.io"
TOKEN = "nodetemplatex"
CLASSES = {
    "whole card": "gpu-h100-80gb",
    "MIG 1g.10gb": "gpu-h100-80gb-mig-1g.10gb",
    "shared 25 %": "gpu-h100-80gb-shared",
}


RESTRICTED = ("1g.10gb", "3g.40gb", "7g.80gb")
# The control layout: (c) without counters. Not published by the module; it isolates the device count.
CONTROL = "(e) control: (c) without counters"
LAYOUTS = {
    "(a) whole cards": OfferPolicy(mig=False),
    "(b) full counters": OfferPolicy(counters="full"),
    "(c) reduced": OfferPolicy(),
    "(d) 3 profiles": OfferPolicy(mig_profiles=(("h100-sxm5-80gb", frozenset(RESTRICTED)),)),
    CONTROL: OfferPolicy(),
    "sharing": OfferPolicy(sharing=True),
}


def without_counters(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One node's slices with every consumesCounters removed and the counters-only slices dropped."""
    kept = [item for item in slices if item["spec"].get("devices")]
    for item in kept:
        item["spec"]["pool"]["resourceSliceCount"] = len(kept)
        for device in item["spec"]["devices"]:
            device.pop("consumesCounters", None)
    return kept


def cluster(
    policy: OfferPolicy, counters: bool = True, count: int = NODES
) -> tuple[Inventory, list[str], list[str]]:
    cards = node_cards(TOKEN, "h100-80gb", CARDS)
    rendered = render(TOKEN, [card_offers(card, policy) for card in cards], 35, 1, None)
    template = json.dumps(rendered if counters else without_counters(rendered))
    nodes = [f"gpu-{index:03d}" for index in range(count)]
    slices: list[dict[str, Any]] = []
    for node in nodes:
        slices += json.loads(template.replace(TOKEN, node))
    addresses = [card["status"]["pciInfo"]["address"] for card in cards]
    return build_inventory(slices), nodes, addresses


def taken(fraction: float, nodes: list[str], addresses: list[str], sharing: bool) -> AllocatedState:
    """Cards already in use, spread evenly over the cluster."""
    state = AllocatedState()
    index = 0
    for node in nodes:
        for address in addresses:
            index += 1
            if (index * 37) % 100 >= fraction * 100:
                continue
            key = (DRIVER, f"gpus/{node}", physical_name(address))
            if sharing:
                state.shares[key] = {"sharePercent": 100}  # type: ignore[dict-item]
            else:
                state.in_use.add(key)
    return state


def claim(device_class: str, share: bool) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if share:
        exactly["capacity"] = {"requests": {"sharePercent": "25"}}
    request = {"name": "gpu", "exactly": exactly}
    return {"metadata": {"namespace": "bench", "name": "c"}, "spec": {"devices": {"requests": [request]}}}


def place(
    allocator: Allocator, claims: list[Any], nodes: list[str], state: AllocatedState
) -> tuple[list[float], list[int]]:
    latencies, tried = [], []
    start = 0
    for parsed in claims:
        began = time.process_time()
        for attempt in range(len(nodes)):
            index = (start + attempt) % len(nodes)
            outcome = allocator.allocate([parsed], Node(nodes[index]), state)
            if outcome.allocations is not None:
                for result in outcome.allocations[0]["devices"]["results"]:
                    state.add_result(result, True)
                start = (index + 1) % len(nodes)
                tried.append(attempt + 1)
                break
        latencies.append((time.process_time() - began) * 1000)
    return latencies, tried


def run() -> None:
    print(f"Allocator ({NODES} nodes x {CARDS} H100, 1.35 layout, {CLAIMS} claims of one device each)")
    import yaml  # noqa: PLC0415

    from benchmarks.common import ROOT  # noqa: PLC0415

    classes = parse_classes(
        [c for c in yaml.safe_load_all((ROOT / "docs/examples/deviceclasses.yaml").read_text()) if c]
    )
    semantics = Semantics("1.35")
    whole: dict[str, list[float]] = {}
    for layout, policy in LAYOUTS.items():
        sharing = policy.sharing
        began = time.perf_counter()
        inventory, nodes, addresses = cluster(policy, counters=layout != CONTROL)
        devices = sum(len(s.devices) for s in inventory.slices)
        line(
            f"{layout}: slices parsed",
            (time.perf_counter() - began),
            f"s ({len(inventory.slices)} slices, {devices} devices)",
            2,
        )
        for name, class_name in CLASSES.items():
            if ("shared" in name) != sharing or ("MIG" in name and (not policy.mig or layout == CONTROL)):
                continue
            parsed = [parse_claim(claim(class_name, sharing), classes, semantics) for _ in range(CLAIMS)]
            matcher = CelMatcher()
            alternative = parsed[0].requests[0].alternatives[0]
            began = time.perf_counter()
            for item in inventory.slices:
                for device in item.devices:
                    selectors_match(matcher, alternative, device)
            line(f"{name}: class selector on every device (cold)", time.perf_counter() - began, "s", 2)
            for fraction in (0.0, 0.5, 0.9):
                # CPU time, the best of three rounds: other work on the machine does not count.
                rounds = []
                for _ in range(ROUNDS):
                    allocator = Allocator(inventory, semantics, matcher)
                    state = taken(fraction, nodes, addresses, sharing)
                    began = time.process_time()
                    latencies, tried = place(allocator, parsed, nodes, state)
                    rounds.append((len(latencies) / (time.process_time() - began), latencies, tried))
                rate, latencies, tried = max(rounds, key=lambda found: found[0])
                if name == "whole card":
                    whole.setdefault(layout, []).append(rate)
                ordered = sorted(latencies)
                p95 = ordered[int(len(ordered) * 0.95) - 1]
                mean_tried = statistics.mean(tried) if tried else 0.0
                print(
                    f"  {name:<12} {int(fraction * 100):>2} % taken: {rate:7.0f} claims/s"
                    f"   p50 {statistics.median(ordered):6.2f} ms   p95 {p95:6.2f} ms"
                    f"   nodes tried {mean_tried:4.1f}   placed {len(tried)}/{len(parsed)}"
                )
    base = whole["(a) whole cards"]
    print("  whole-card claims: time per claim against (a), at 0 / 50 / 90 % taken")
    for layout, rates in whole.items():
        if layout != "sharing":
            ratios = " / ".join(f"{b / r:4.2f}x" for b, r in zip(base, rates, strict=True))
            print(f"    {layout:<34} {ratios}")
