# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How well the real kube-scheduler's first fit packs MIG instances in each publishing order
(issue 37, item 2; domain/offers/placement_order.py, DESIGN.md D19).

A seeded random stream of MIG claims of mixed profiles (one class per profile) arrives at a few
fake nodes of H100 cards, each claim living a random number of steps; departures of a step go
before its arrival. Each arrival is one ResourceClaim and one Pod for the real scheduler
(benchmarks/real_scheduler.py's ``bench_cluster``); it is placed when the Pod is bound, refused
when the scheduler reports it Unschedulable (the Pod and claim are then deleted: a request that
cannot be placed at once counts as Pending). Each refusal is checked with an exact offline packer:
could all instances running then, plus this one, be laid out on the cards at all (any placements,
any cards)? Those are the "Pending, optimal would place" column, the gap to an optimal packer.

The same stream, node slices and classes run once per order of the MIG devices in each card:

- old: the module's earlier order, devices sorted by name (lowest start first);
- NVIDIA: NVML's enumeration, profile by profile in the card's order, lowest start first (the
  NVIDIA DRA driver's dynamic MIG names its devices after profile ID and placement start);
- new: domain/offers/placement_order.py.

Cards are in address order in all three (each card's devices together): the same for all.
``python -m benchmarks.mig_packing [--nodes 1] [--cards 8] [--arrivals 150] [--seeds 1-5]
[--offline-seeds 1-40] [--scheduler 1.36+#138917]``; ``make bench`` runs it. After the real
scheduler's seeds, many more streams are replayed with the module's own allocator on the same
slices (``replay``): a static order cannot win every stream (first fit does not know what
arrives next), so the total and the median over many streams are what an order is judged by,
and "served" (memory slices x steps of the instances placed) shows what a stream where the new
order places fewer got instead. On one node the scheduler's choice is the
device order alone; with several, it also picks at random among nodes that score alike.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from benchmarks.real_scheduler import NAMESPACE, SCHEDULERS, add_nodes, bench_cluster, clear, publish
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import CardOffers, OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState
from testkit.gpu_objects import node_cards
from testkit.real_cluster import ApiError, RealCluster

MODEL = "h100-80gb"
TOKEN = "nodetemplatex"
# The mix of the stream: profile and weight (small ones most often, as in a shared inference cluster).
MIX = (("1g.10gb", 0.40), ("2g.20gb", 0.25), ("3g.40gb", 0.20), ("4g.40gb", 0.10), ("7g.80gb", 0.05))
ORDERS = ("old", "NVIDIA", "new")
RESOURCE = "resource.k8s.io/v1"


def class_name(profile: str) -> str:
    return "bench-mig-" + profile.replace(".", "-")


def classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": {"name": class_name(profile)},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": 'device.driver == "gpu.deckhouse.io" && '
                            'device.attributes["gpu.deckhouse.io"].deviceType == "MIG" && '
                            f'device.attributes["gpu.deckhouse.io"].migProfile == "{profile}"'
                        }
                    }
                ]
            },
        }
        for profile, _ in MIX
    ]


def reorder(card: CardOffers, order: str, profiles: Sequence[str]) -> CardOffers:
    if order == "new":
        return card
    if order == "old":
        return CardOffers(card.address, card.counter_set, sorted(card.offers, key=lambda o: o.name))
    rank = {name: index for index, name in enumerate(profiles)}

    def nvml(offer: Any) -> tuple[int, int, int]:
        if offer.kind != "MIG":
            return (0, 0, 0)
        return (1, rank[str(offer.attributes["migProfile"])], int(offer.attributes["migPlacementStart"]))

    return CardOffers(card.address, card.counter_set, sorted(card.offers, key=nvml))


def node_template(order: str, cards: int) -> str:
    found = node_cards(TOKEN, MODEL, cards)
    profiles = [str(p["name"]) for p in found[0]["status"]["capabilities"]["nvidia"]["mig"]["profiles"]]
    policy = OfferPolicy(demand=demand_of(classes()))
    offers = [reorder(card_offers(card, policy), order, profiles) for card in found]
    return json.dumps(render(TOKEN, offers, 36, 1, None))


@dataclass(frozen=True)
class Request:
    index: int
    profile: str
    lifetime: int  # steps


def stream(seed: int, arrivals: int, mean_life: float) -> list[Request]:
    draw = random.Random(seed)  # noqa: S311 - a reproducible stream, not a secret
    names, weights = [name for name, _ in MIX], [weight for _, weight in MIX]
    return [
        Request(index, draw.choices(names, weights)[0], max(1, round(draw.expovariate(1 / mean_life))))
        for index in range(arrivals)
    ]


def placements() -> dict[str, tuple[int, ...]]:
    """Profile -> bit masks of its placements on the model's memory slices (NVML's data)."""
    card = node_cards("x", MODEL, 1)[0]
    result = {}
    for profile in card["status"]["capabilities"]["nvidia"]["mig"]["profiles"]:
        result[str(profile["name"])] = tuple(
            ((1 << int(p["size"])) - 1) << int(p["start"]) for p in profile.get("placements") or []
        )
    return result


@cache
def card_sets() -> frozenset[tuple[int, ...]]:
    """Every multiset of the stream's profiles (counts in MIX order) one card can hold at once."""
    table = placements()
    profiles = [profile for profile, _ in MIX]
    found: set[tuple[int, ...]] = set()

    def grow(first: int, used: int, counts: list[int]) -> None:
        found.add(tuple(counts))
        for index in range(first, len(profiles)):
            for place in table[profiles[index]]:
                if not used & place:
                    counts[index] += 1
                    grow(index, used | place, counts)
                    counts[index] -= 1

    grow(0, 0, [0] * len(profiles))
    return frozenset(found)


def packable(profiles: Sequence[str], cards: int) -> bool:
    """Whether instances of ``profiles`` fit on ``cards`` free cards in any layout: exact, by
    splitting their counts into ``cards`` multisets that one card can hold. What a card can hold
    is closed under taking less, so each card takes as much of the rest as one of its largest
    multisets allows."""
    order = [profile for profile, _ in MIX]
    wanted = tuple(sum(1 for p in profiles if p == name) for name in order)
    every = card_sets()
    largest = [
        c for c in every if not any(o != c and all(a <= b for a, b in zip(c, o, strict=True)) for o in every)
    ]

    @cache
    def split(rest: tuple[int, ...], left: int) -> bool:
        if not any(rest):
            return True
        if left == 0:
            return False
        taken = {tuple(min(n, r) for n, r in zip(c, rest, strict=True)) for c in largest}
        return any(
            split(tuple(r - n for r, n in zip(rest, t, strict=True)), left - 1) for t in taken if any(t)
        )

    return split(wanted, cards)


@cache
def slices_of(profile: str) -> int:
    """Memory slices one instance of ``profile`` holds on the model."""
    return max(place.bit_count() for place in placements()[profile])


@dataclass
class Outcome:
    order: str
    arrivals: int = 0
    placed: int = 0
    pending: int = 0
    pending_packable: int = 0
    seconds: float = 0.0
    placed_by_profile: dict[str, int] = field(default_factory=dict)
    # Memory slices x steps the placed instances held (until they left or the stream ended): the
    # work served. An order that places a large claim may refuse two small ones later for it.
    served: int = 0

    def place(self, request: Request, step: int, steps: int) -> None:
        self.placed += 1
        self.placed_by_profile[request.profile] = self.placed_by_profile.get(request.profile, 0) + 1
        self.served += slices_of(request.profile) * (min(step + request.lifetime, steps) - step)

    def refuse(self, running: Sequence[str], request: Request, cards: int) -> None:
        self.pending += 1
        if packable([*running, request.profile], cards):
            self.pending_packable += 1


def _claim(name: str, profile: str) -> dict[str, Any]:
    request = {"name": "mig", "exactly": {"deviceClassName": class_name(profile)}}
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"devices": {"requests": [request]}},
    }


def _pod(name: str, run: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"bench-run": run}},
        "spec": {
            "nodeSelector": {"bench-run": run},
            "containers": [{"name": "c", "image": "bench", "resources": {"claims": [{"name": "mig"}]}}],
            "resourceClaims": [{"name": "mig", "resourceClaimName": name}],
        },
    }


def _verdict(cluster: RealCluster, name: str, timeout: float = 60) -> bool:
    """True when the Pod is bound, False when the scheduler found it Unschedulable."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = cluster.request("GET", path)
        if pod["spec"].get("nodeName"):
            return True
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                if condition.get("reason") == "Unschedulable":
                    return False
                raise RuntimeError(f"pod {name}: {condition.get('reason')}: {condition.get('message')}")
        time.sleep(0.05)
    raise TimeoutError(f"pod {name}: no scheduling verdict in {timeout:.0f} s")


def _remove(cluster: RealCluster, names: Sequence[str]) -> None:
    """Pods (at once: no kubelet) and their claims; back only when the claims are gone, so the
    scheduler's next decision sees the devices free."""
    for name in names:
        for path in (f"/api/v1/namespaces/{NAMESPACE}/pods/{name}?gracePeriodSeconds=0",
                     f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{name}"):  # fmt: skip
            try:
                cluster.request("DELETE", path)
            except ApiError as error:
                if error.status != 404:
                    raise
    for name in names:
        path = f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{name}"
        cluster.wait_for(functools.partial(_gone, cluster, path), 60, f"claim {name} deleted")


def _gone(cluster: RealCluster, path: str) -> bool:
    try:
        cluster.request("GET", path)
    except ApiError as error:
        return error.status == 404
    return False


def run_order(
    cluster: RealCluster,
    binary: str,
    order: str,
    requests: Sequence[Request],
    nodes: int,
    cards: int,
    serial: int,
) -> Outcome:
    run = f"p{serial}"
    clear(cluster)
    names = [f"{run}-gpu-{index}" for index in range(nodes)]
    add_nodes(cluster, names, run)
    publish(cluster, node_template(order, cards), names, run)
    scheduler = cluster.start_scheduler(binary, name=f"scheduler-{run}")
    outcome, began = Outcome(order), time.monotonic()
    running: dict[str, tuple[str, int]] = {}  # claim -> (profile, step it leaves at)
    try:
        time.sleep(3)  # the informers' first lists
        for step, request in enumerate(requests):
            due = [name for name, (_, end) in running.items() if end <= step]
            _remove(cluster, due)
            for name in due:
                del running[name]
            name = f"{run}-c{request.index:04d}"
            cluster.create(_claim(name, request.profile))
            cluster.create(_pod(name, run))
            outcome.arrivals += 1
            if _verdict(cluster, name):
                outcome.place(request, step, len(requests))
                running[name] = (request.profile, step + request.lifetime)
                continue
            outcome.refuse([profile for profile, _ in running.values()], request, nodes * cards)
            _remove(cluster, [name])
        _remove(cluster, list(running))
    finally:
        scheduler.stop()
        cluster.processes.pop(f"scheduler-{run}", None)
    outcome.seconds = time.monotonic() - began
    return outcome


def replay(order: str, requests: Sequence[Request], nodes: int, cards: int) -> Outcome:
    """The same stream answered by the module's own allocator (k8s_semantics/allocator, which
    tests/real/test_allocator_vs_scheduler.py keeps equal to the real scheduler) on the same
    slices, 1.36's rules: seconds instead of minutes, for many seeds. Several nodes are tried in
    name order, where the real scheduler picks at random among nodes that score alike."""
    semantics = Semantics("1.36")
    template = node_template(order, cards)
    names = [f"replay-{index}" for index in range(nodes)]
    slices = [item for name in names for item in json.loads(template.replace(TOKEN, name))]
    allocator = Allocator(
        build_inventory(slices), semantics, CelMatcher(consumable_capacity=semantics.consumable)
    )
    known = parse_classes(classes())
    outcome = Outcome(order)
    running: dict[int, tuple[str, int, list[dict[str, Any]]]] = {}  # request -> (profile, leaves at, results)
    for step, request in enumerate(requests):
        for index in [index for index, (_, end, _) in running.items() if end <= step]:
            del running[index]
        state = AllocatedState()
        for _, _, results in running.values():
            for result in results:
                state.add_result(result, semantics.consumable)
        claim = parse_claim(_claim(f"r{request.index}", request.profile), known, semantics)
        outcome.arrivals += 1
        for name in names:
            found = allocator.allocate([claim], Node(name), state)
            if found.error:
                raise RuntimeError(f"replay of request {request.index}: {found.error}")
            if found.allocations is not None:
                results = list(found.allocations[0]["devices"]["results"])
                running[request.index] = (request.profile, step + request.lifetime, results)
                outcome.place(request, step, len(requests))
                break
        else:
            outcome.refuse([profile for profile, _, _ in running.values()], request, nodes * cards)
    return outcome


def offline(seeds: Sequence[int], arrivals: int, mean_life: float, nodes: int, cards: int,
            orders: Sequence[str] = ORDERS) -> dict[str, list[Outcome]]:  # fmt: skip
    """Every order on every seed, replayed (``replay``); per order the outcomes in seed order."""
    found: dict[str, list[Outcome]] = {order: [] for order in orders}
    for seed in seeds:
        requests = stream(seed, arrivals, mean_life)
        for order in orders:
            found[order].append(replay(order, requests, nodes, cards))
    return found


def report_offline(found: dict[str, list[Outcome]], seeds: Sequence[int]) -> None:
    span = f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} streams)"
    print(f"\n  The module's allocator on the same slices, {span}")
    print(f"  {'order':<8}{'placed':>8}{'median':>8}{'served':>9}   new against it, per seed")
    new = found.get("new")
    for order, outcomes in found.items():
        placed = [o.placed for o in outcomes]
        served = sum(o.served for o in outcomes)
        line = f"  {order:<8}{sum(placed):>8}{statistics.median(placed):>8g}{served:>9}"
        if new is not None and order != "new":
            diffs = [n.placed - o.placed for n, o in zip(new, outcomes, strict=True)]
            more = sum(1 for d in diffs if d > 0)
            fewer = [d for d in diffs if d < 0]
            instead = sum(
                1 for n, o, d in zip(new, outcomes, diffs, strict=True) if d < 0 and n.served >= o.served
            )
            line += (
                f"   more on {more}, as many on {diffs.count(0)}, fewer on {len(fewer)} "
                f"(median {statistics.median(diffs):+g}; of the fewer, {instead} served more slice-steps)"
            )
        print(line)


def report(outcomes: Sequence[Outcome]) -> None:
    print(
        f"  {'order':<8}{'arrivals':>9}{'placed':>8}{'Pending':>9}{'Pending, optimal would place':>30}"
        f"{'served':>8}{'wall s':>8}  placed by profile"
    )
    for o in outcomes:
        profiles = ", ".join(f"{p} {o.placed_by_profile.get(p, 0)}" for p, _ in MIX)
        print(
            f"  {o.order:<8}{o.arrivals:>9}{o.placed:>8}{o.pending:>9}{o.pending_packable:>30}"
            f"{o.served:>8}{o.seconds:>8.0f}  {profiles}"
        )


def total(order: str, outcomes: Sequence[Outcome]) -> Outcome:
    summed = Outcome(order)
    for o in (o for o in outcomes if o.order == order):
        summed.arrivals += o.arrivals
        summed.placed += o.placed
        summed.pending += o.pending
        summed.pending_packable += o.pending_packable
        summed.seconds += o.seconds
        summed.served += o.served
        for profile, count in o.placed_by_profile.items():
            summed.placed_by_profile[profile] = summed.placed_by_profile.get(profile, 0) + count
    return summed


def run(
    nodes: int = 1,
    cards: int = 8,
    arrivals: int = 150,
    mean_life: float = 25.0,
    seeds: Sequence[int] = (1, 2, 3, 4, 5),
    label: str = "1.36+#138917",
    orders: Sequence[str] = ORDERS,
    offline_seeds: Sequence[int] = tuple(range(1, 41)),
) -> list[Outcome]:
    version, binary, label = next(s for s in SCHEDULERS if s[2] == label)
    mix = ", ".join(f"{p} {w:.0%}" for p, w in MIX)
    print(
        f"MIG packing on the real kube-scheduler {label}: {nodes} node(s) x {cards} H100, "
        f"{arrivals} claims a seed ({mix}), mean life {mean_life:g} steps, seeds {list(seeds)}"
    )
    outcomes = []
    with bench_cluster(version) as cluster:
        for item in classes():
            cluster.ensure(item)
        serial = 0
        for seed in seeds:
            requests = stream(seed, arrivals, mean_life)
            print(f"  seed {seed}")
            for order in orders:
                serial += 1
                outcome = run_order(cluster, binary, order, requests, nodes, cards, serial)
                outcomes.append(outcome)
                report([outcome])
    print("\n  All seeds")
    report([total(order, outcomes) for order in orders])
    if offline_seeds:
        report_offline(offline(offline_seeds, arrivals, mean_life, nodes, cards, orders), offline_seeds)
    return outcomes


def seed_list(text: str) -> list[int]:
    """``1,2,5-9`` -> [1, 2, 5, 6, 7, 8, 9]; empty: none."""
    found: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--cards", type=int, default=8, help="H100 per node")
    parser.add_argument("--arrivals", type=int, default=150)
    parser.add_argument(
        "--mean-life", type=float, default=25.0, help="steps a placed claim lives, on average"
    )
    parser.add_argument("--seeds", default="1-5", help="comma-separated, or ranges; one stream each")
    parser.add_argument(
        "--offline-seeds",
        default="1-40",
        help="streams replayed with the module's allocator after; empty: none",
    )
    parser.add_argument("--scheduler", default="1.36+#138917", help="a label of real_scheduler.SCHEDULERS")
    parser.add_argument("--orders", default=",".join(ORDERS))
    args = parser.parse_args()
    run(
        args.nodes,
        args.cards,
        args.arrivals,
        args.mean_life,
        seed_list(args.seeds),
        args.scheduler,
        args.orders.split(","),
        seed_list(args.offline_seeds),
    )


if __name__ == "__main__":
    main()
