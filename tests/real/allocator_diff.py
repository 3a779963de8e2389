# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Random pools and claims for the differential test of our allocator against kube-scheduler
(tests/real/test_allocator_vs_scheduler.py), and our allocator's answers for the same input.

Pools are what the module publishes: simulated PhysicalGPUs (testkit/gpu_objects.py) turned into
offers by domain/offers (whole cards, MIG with the card's counter set, shared cards, health
taints) and laid out by domain/offers/slice_layout.py for the server's minor (1.34: a slice per
card; 1.35+: counters-only slices and devices slices). Claims are random requests over a few
DeviceClasses: ExactCount or All, selectors on attributes and capacity, capacity requests,
tolerations, constraints, and prioritized lists (firstAvailable).

Everything here is pure (no cluster): ``ours`` answers a recorded case, so a disagreement printed
by the test (``Record.json``) can be replayed with ``replay``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.inventory.health.device_health import TAINT_KEY
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.device_taints import tainted
from deckhouse_gpu.domain.offers.model import DeviceTaint, OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState
from testkit.gpu_objects import ready_card

DRIVER = "gpu.deckhouse.io"
# MIG-capable (A30: 4 memory slices, A100/H100: 8) and whole-card-only models (T4, L40S).
MODELS = ("a30", "a100-40gb", "h100-80gb", "t4", "l40s")
ATTR = f'device.attributes["{DRIVER}"]'
CAP = f'device.capacity["{DRIVER}"]'
IS_OURS = f'device.driver == "{DRIVER}"'
# The classes every case draws from, by role; the test names them per run (``class_objects``).
CLASS_SELECTORS = {
    "any": IS_OURS,
    "physical": f'{IS_OURS} && {ATTR}.deviceType == "Physical"',
    "mig": f'{IS_OURS} && {ATTR}.deviceType == "MIG"',
    "big": f'{IS_OURS} && {CAP}.memory.compareTo(quantity("40Gi")) >= 0',
}
# Offers follow the classes (DESIGN.md D19): some nodes publish only what a random part of these
# may select, one of them narrowing MIG to every other placement, so that filtered layouts (some
# placements of a profile, counters of what stays) meet the scheduler too.
DEMAND_SELECTORS = {
    **{role: CLASS_SELECTORS[role] for role in ("physical", "mig", "big")},
    "even": f'{IS_OURS} && {ATTR}.deviceType == "MIG" && {ATTR}.migPlacementStart % 2 == 0',
}
TAINT_VALUES = (("Unhealthy", "NoSchedule"), ("XidError", "NoSchedule"), ("GPULost", "NoExecute"))

Answer = tuple[tuple[Any, ...], ...] | None  # normalized results, or None: does not fit


def class_objects(prefix: str, selectors: Mapping[str, str] = CLASS_SELECTORS) -> dict[str, dict[str, Any]]:
    """The DeviceClasses of a run, by role."""
    return {
        role: {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": f"{prefix}-{role}"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        for role, expression in selectors.items()
    }


# ---------------------------------------------------------------------------------------------
# Pools


@dataclass
class Pools:
    node: str
    models: list[str]
    policy: str  # OfferPolicy's repr, for the printout
    taints: dict[str, str]  # card address -> "value:effect"
    slices: list[dict[str, Any]]  # as rendered, in the publisher's order


def random_pools(rng: random.Random, node: str, minor: int) -> Pools:
    """1 to 3 cards of one node with a random policy and random health taints."""
    models = [rng.choice(MODELS) for _ in range(rng.choice((1, 1, 2, 2, 3)))]
    cards = [ready_card(node, f"0000:{0x10 + i * 0x08:02x}:00.0", model) for i, model in enumerate(models)]
    sharing = rng.random() < 0.2
    profiles: tuple[tuple[str, frozenset[str]], ...] = ()
    if rng.random() < 0.25:
        # dra.migProfiles of the ModuleConfig: restrict each MIG model to a random part of its profiles.
        for card in cards:
            mig = (card["status"]["capabilities"].get("nvidia") or {}).get("mig") or {}
            names = sorted({p["name"] for p in mig.get("profiles") or []})
            if names:
                device = card["metadata"]["labels"]["gpu.deckhouse.io/device"]
                profiles += ((device, frozenset(rng.sample(names, rng.randint(1, len(names))))),)
    policy = OfferPolicy(mig=rng.random() < 0.85, sharing=sharing, mig_profiles=profiles)
    if rng.random() < 0.3:
        roles = rng.sample(sorted(DEMAND_SELECTORS), rng.randint(1, len(DEMAND_SELECTORS)))
        chosen = [
            {"metadata": {"name": r}, "spec": {"selectors": [{"cel": {"expression": DEMAND_SELECTORS[r]}}]}}
            for r in roles
        ]
        policy = dataclasses.replace(policy, demand=demand_of(chosen))
    offers = []
    taints: dict[str, str] = {}
    for card in cards:
        found = card_offers(card, policy)
        if rng.random() < 0.2:
            value, effect = rng.choice(TAINT_VALUES)
            taints[found.address] = f"{value}:{effect}"
            found = tainted(found, DeviceTaint(TAINT_KEY, value, effect))
        offers.append(found)
    slices = render(node, offers, minor, 1, None)
    return Pools(node, models, repr(policy), taints, slices)


# ---------------------------------------------------------------------------------------------
# Claims


@dataclass
class Facts:
    """What the node's devices offer, so that selectors sometimes hit and sometimes miss."""

    models: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    sharing: bool = False

    @classmethod
    def of(cls, slices: Iterable[Mapping[str, Any]]) -> Facts:
        facts = cls()
        for item in slices:
            for device in item["spec"].get("devices") or ():
                attributes = device.get("attributes") or {}
                facts.models.append(attributes["device"]["string"])
                if "migProfile" in attributes:
                    facts.profiles.append(attributes["migProfile"]["string"])
                facts.roots.append(attributes["resource.kubernetes.io/pcieRoot"]["string"])
                facts.sharing |= bool(device.get("allowMultipleAllocations"))
        facts.models, facts.profiles, facts.roots = (
            sorted(set(facts.models)),
            sorted(set(facts.profiles)),
            sorted(set(facts.roots)),
        )
        return facts


def _selector(rng: random.Random, facts: Facts) -> str:
    kind = rng.choice(("model", "profile", "memory", "placement", "root"))
    if kind == "model" and facts.models:  # none where the classes left the node nothing to offer
        model = rng.choice(facts.models) if rng.random() < 0.9 else "no-such-model"
        return f'{ATTR}.device == "{model}"'
    if kind == "profile" and facts.profiles:
        # A false first term short-circuits: a whole card has no migProfile to read.
        return f'{ATTR}.deviceType == "MIG" && {ATTR}.migProfile == "{rng.choice(facts.profiles)}"'
    if kind == "placement":
        return f'{ATTR}.deviceType == "MIG" && {ATTR}.migPlacementStart >= {rng.choice((1, 2, 4))}'
    if kind == "root" and facts.roots:
        return f'device.attributes["resource.kubernetes.io"].pcieRoot == "{rng.choice(facts.roots)}"'
    size = rng.choice(("5Gi", "10Gi", "20Gi", "40Gi", "80Gi"))
    return f'{CAP}.memory.compareTo(quantity("{size}")) >= 0'


def _body(rng: random.Random, facts: Facts, classes: Mapping[str, str], most: int) -> dict[str, Any]:
    # Mostly classes the node can serve, so that about half the claims fit.
    weights = {"any": 3.0, "physical": 2.0, "mig": 2.0 if facts.profiles else 0.3, "big": 1.0}
    role = rng.choices(list(weights), list(weights.values()))[0]
    body: dict[str, Any] = {"deviceClassName": classes[role]}
    if rng.random() < 0.5:
        body["selectors"] = [
            {"cel": {"expression": _selector(rng, facts)}} for _ in range(rng.choice((1, 1, 2)))
        ]
    if rng.random() < 0.1:
        body["allocationMode"] = "All"
    else:
        # A few devices at most: a claim that cannot fit makes both searches try every
        # combination, and the scheduler gives up after its filter timeout.
        body["count"] = min(most, rng.choice((1, 1, 1, 1, 1, 2, 3)))
    if rng.random() < 0.3:
        toleration = rng.choice(
            (
                {"key": TAINT_KEY, "operator": "Exists"},
                {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                {"key": TAINT_KEY, "operator": "Equal", "value": "GPULost", "effect": "NoExecute"},
                {"operator": "Exists"},
            )
        )
        body["tolerations"] = [toleration]
    if rng.random() < (0.6 if facts.sharing else 0.05):
        requests: dict[str, str] = {}
        if rng.random() < 0.8:
            requests["sharePercent"] = str(rng.choice((10, 25, 30, 50, 60, 100)))
        if rng.random() < 0.4 or not requests:
            requests["memory"] = rng.choice(("1Gi", "4Gi", "10Gi", "30Gi"))
        body["capacity"] = {"requests": requests}
    return body


def random_claim(
    rng: random.Random, name: str, namespace: str, facts: Facts, classes: Mapping[str, str], minor: int
) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    several = rng.choice((1, 1, 1, 2))
    most = 3 if several == 1 else 2
    for index in range(several):
        request_name = f"r{index}"
        if rng.random() < 0.25:
            subrequests = [
                {"name": f"s{sub}", **_body(rng, facts, classes, most)}
                for sub in range(rng.choice((2, 2, 3)))
            ]
            if minor == 34:
                # kube-scheduler 1.34.9 (DRAConsumableCapacity on) panics and exits when its search
                # moves on to a later subrequest and the subrequests ask for more than one device
                # ("index out of range [1] with length 1" in CmpRequestOverCapacity); 1.35 and 1.36
                # do not. Such claims stay out of the 1.34 cases (docs/internal/TESTING.md).
                for sub in subrequests:
                    sub.pop("allocationMode", None)
                    sub["count"] = 1
            requests.append({"name": request_name, "firstAvailable": subrequests})
        else:
            requests.append({"name": request_name, "exactly": _body(rng, facts, classes, most)})
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.3:
        attribute = rng.choice(
            ("gpu.deckhouse.io/pciAddress", "resource.kubernetes.io/pcieRoot", "gpu.deckhouse.io/device")
        )
        kind = rng.choice(("matchAttribute", "distinctAttribute"))
        constraint: dict[str, Any] = {kind: attribute}
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = [r["name"] for r in requests]
        devices["constraints"] = [constraint]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": devices},
    }


# ---------------------------------------------------------------------------------------------
# Our allocator's answer


def normalize(results: Iterable[Mapping[str, Any]]) -> tuple[tuple[Any, ...], ...]:
    """What both sides must agree on, per result in order: request, device and its pool, the
    consumed capacity (as numbers: "25" and "25.0" are one amount) and the tolerations copied into
    the result. A shareID is random on both sides and is left out."""
    found = []
    for result in results:
        consumed = tuple(
            sorted(
                (str(k), Quantity.parse(str(v)).value)
                for k, v in (result.get("consumedCapacity") or {}).items()
            )
        )
        tolerations = tuple(
            tuple(sorted((str(k), str(v)) for k, v in t.items() if v not in ("", None)))
            for t in result.get("tolerations") or ()
        )
        found.append(
            (
                str(result.get("request")),
                str(result.get("driver")),
                str(result.get("pool")),
                str(result.get("device")),
                consumed,
                tolerations,
                result.get("adminAccess") is True,
            )
        )
    return tuple(found)


def slice_orders(slices: Sequence[Mapping[str, Any]], version: str) -> list[list[Mapping[str, Any]]]:
    """The orders of the node's slices the scheduler of ``version`` may search in.

    1.34 and 1.35 gather a pool's slices in the order its informer lists them, which is a Go
    map's: any order of the slices that hold devices (pools_stable/experimental.go, GatherPools;
    the devices of one slice keep their array order). 1.36 sorts a pool's slices by name
    (kubernetes/kubernetes #136641), so there is one order, and it is not the publisher's: the
    publisher's order is passed on, and our allocator must sort them itself.
    """
    if version not in ("1.34", "1.35"):
        return [list(slices)]
    counters = [s for s in slices if not s["spec"].get("devices")]
    devices = [s for s in slices if s["spec"].get("devices")]
    return [[*counters, *order] for order in itertools.permutations(devices)]


@dataclass
class Ours:
    answers: dict[Answer, int]  # answer -> how many slice orders give it
    errors: list[str]
    # Our own parsing failed on a claim the API server stored: never an agreement, whatever
    # the scheduler answered (a "no fit" from a crash of ours would hide the bug).
    crashed: list[str] = field(default_factory=list)


def ours(
    version: str,
    node: str,
    slices: Sequence[Mapping[str, Any]],
    classes: Sequence[Mapping[str, Any]],
    allocated: Sequence[Mapping[str, Any]],
    claim: Mapping[str, Any],
    matcher: CelMatcher | None = None,
) -> Ours:
    """Our allocator's answers for ``claim`` on ``node``, one per order of the slices the
    scheduler may use, with ``allocated`` (results already allocated on the node) in use."""
    semantics = Semantics(version)
    matcher = matcher or CelMatcher(consumable_capacity=semantics.consumable)
    parsed_classes = parse_classes(classes)
    found = Ours({}, [])
    for order in slice_orders(slices, version):
        state = AllocatedState()
        for result in allocated:
            state.add_result(result, semantics.consumable)
        allocator = Allocator(build_inventory([dict(s) for s in order]), semantics, matcher)
        try:
            parsed = parse_claim(claim, parsed_classes, semantics)
        except Exception as error:
            found.errors.append(f"parse: {error}")
            found.crashed.append(f"{type(error).__name__}: {error}")
            continue
        outcome = allocator.allocate([parsed], Node(node), state)
        if outcome.error:
            found.errors.append(outcome.error)
        answer = (
            None if outcome.allocations is None else normalize(outcome.allocations[0]["devices"]["results"])
        )
        found.answers[answer] = found.answers.get(answer, 0) + 1
    return found


# ---------------------------------------------------------------------------------------------
# The record of one step, printed on a disagreement and replayable


@dataclass
class Record:
    version: str
    node: str
    pools: dict[str, Any]  # Pools without the slices
    slices: list[dict[str, Any]]  # as the API server stored them, in the publisher's order
    classes: list[dict[str, Any]]
    allocated: list[dict[str, Any]]  # results allocated by the scheduler on the node before
    claim: dict[str, Any]  # as the API server stored it
    scheduler: list[dict[str, Any]] | None  # its results, None: unschedulable
    scheduler_message: str
    ours: list[Any]
    our_errors: list[str]

    def json(self) -> str:
        return json.dumps(asdict(self), indent=1, default=str, sort_keys=True)


def replay(text: str) -> Ours:
    """Our allocator's answers for a printed record (``Record.json``)."""
    record = json.loads(text)
    return ours(
        record["version"],
        record["node"],
        record["slices"],
        record["classes"],
        record["allocated"],
        record["claim"],
    )


def agrees(scheduler: Answer, mine: Ours) -> bool:
    """The scheduler's answer is one our allocator gives for some slice order the scheduler may
    have used; with one possible order (1.36, or a single slice with devices) it is ours exactly.
    Our parser failing on the claim is a disagreement, whatever the scheduler said."""
    return not mine.crashed and scheduler in mine.answers


def as_fraction_free(answer: Answer) -> Any:
    """An answer for the printout (JSON has no Fraction)."""
    if answer is None:
        return None
    return [
        [*row[:4], [[k, str(v) if isinstance(v, Fraction) else v] for k, v in row[4]], row[5], row[6]]
        for row in answer
    ]
