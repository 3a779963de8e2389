# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers that follow the DeviceClasses lose nothing, judged by the real kube-scheduler (issue 37,
DESIGN.md D19).

A small set of DeviceClasses (whole H100s, H100 1g.10gb, H100 3g.40gb, the upper half of an
A30) is all the cluster holds as far as gpu-handler is told: each node of a pair has an H100 and
an A30, one publishing the FULL layout (every offer, every counter) and the other the FILTERED
one (only what those classes may select, counters of what stays: ``card_offers`` with their
demand). Seeded random claims over those classes (whole cards and MIG profiles, counts up to
every placement of a card, allocationMode All, extra selectors, a same-card constraint) are each
scheduled twice by the real scheduler, once pinned to each node of their own pair. The same
claims must fit: a claim allocated on one and refused on the other, or a request given another
number of devices (All counts them), is a device the filter lost (or one it invented). Every
allocation on the filtered node must be valid on the full one: the devices exist there with the
same attributes and capacity (so the class's selectors say the same), and together they stay
within the full counter set of their card (so the counters the filter left out were not needed).

Beside the random claims, one claim per device of the full layout asks for that device alone
through any of the classes (``pinned_claims``): it fits on the full node exactly when some class
selects the device, so every device the filter must keep is checked, not only those the random
claims happen to need. The random claims come from ``FILTER_DIFF_SEED``; ``FILTER_DIFF_CLAIMS``
makes a longer local run.
"""

from __future__ import annotations

import json
import os
import random
import secrets
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import LABEL_DEVICE
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from testkit.gpu_objects import ready_card
from testkit.real_cluster import RealCluster
from tests.real.allocator_diff import ATTR, CAP, IS_OURS, Pools, class_objects
from tests.real.test_allocator_vs_scheduler import CRASH, Case, Run

CLAIMS = int(os.environ.get("FILTER_DIFF_CLAIMS", "20"))  # random ones, beside one per device
SEED = int(os.environ.get("FILTER_DIFF_SEED", "37"))
CARDS = (("0000:10:00.0", "h100-80gb"), ("0000:18:00.0", "a30"))
# The card's "device" attribute (its PCI name), by model.
DEVICE = {
    model: ready_card("n", address, model)["metadata"]["labels"][LABEL_DEVICE] for address, model in CARDS
}
MIG = f'{IS_OURS} && {ATTR}.deviceType == "MIG"'
# role -> selector; the A30's whole card and lower half, and the H100's other profiles, are
# selected by none of them and so left out of the filtered layout.
CLASS_SELECTORS = {
    "whole": f'{IS_OURS} && {ATTR}.deviceType == "Physical" && {ATTR}.device == "{DEVICE["h100-80gb"]}"',
    "small": f'{MIG} && {ATTR}.migProfile == "1g.10gb"',
    "half": f'{MIG} && {ATTR}.migProfile == "3g.40gb"',
    "a30-upper": f'{MIG} && {ATTR}.device == "{DEVICE["a30"]}" && {ATTR}.migPlacementStart >= 2',
}
# Every placement a role's class selects on one card: a claim for that many needs all of them.
EVERY = {"whole": 1, "small": 7, "half": 2, "a30-upper": 2}
MIN_ALLOCATED = 0.3
MIN_REFUSED = 0.1


def layout(
    node: str, minor: int, classes: Sequence[Mapping[str, Any]] | None, pair: str = ""
) -> list[dict[str, Any]]:
    """The node's slices as gpu-handler renders them: every offer (``classes`` None) or only what
    ``classes`` may select. Both nodes of a ``pair`` have the same cards (UUIDs included)."""
    policy = OfferPolicy() if classes is None else OfferPolicy(demand=demand_of(classes))
    cards = [ready_card(pair or node, address, model) for address, model in CARDS]
    return render(node, [card_offers(card, policy) for card in cards], minor, 1, None)


def _request(rng: random.Random, index: int, classes: Mapping[str, str]) -> dict[str, Any]:
    role = rng.choice(sorted(CLASS_SELECTORS))
    body: dict[str, Any] = {"deviceClassName": classes[role]}
    if rng.random() < 0.2:
        body["allocationMode"] = "All"
    else:
        # Up to every placement the class selects on a card, and one more: a device the filter
        # dropped makes "every placement" fail on one node only.
        body["count"] = rng.choice((1, 1, 2, 3, EVERY[role], EVERY[role] + 1))
    if rng.random() < 0.4:
        extra = rng.choice(
            (
                f"{ATTR}.migPlacementStart >= {rng.choice((2, 4))}",
                f"{ATTR}.migPlacementStart < 4",
                f'{CAP}.memory.compareTo(quantity("{rng.choice(("6Gi", "10Gi", "40Gi"))}")) >= 0',
                f'{ATTR}.device == "{rng.choice(sorted(DEVICE.values()))}"',
            )
        )
        # A whole card has no placement: the first term keeps the selector from failing on it.
        if "migPlacementStart" in extra:
            extra = f'{ATTR}.deviceType == "MIG" && {extra}'
        body["selectors"] = [{"cel": {"expression": extra}}]
    return {"name": f"r{index}", "exactly": body}


def random_claim(rng: random.Random, name: str, namespace: str, classes: Mapping[str, str]) -> dict[str, Any]:
    requests = [_request(rng, index, classes) for index in range(rng.choice((1, 1, 2)))]
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.25:
        devices["constraints"] = [{"matchAttribute": "gpu.deckhouse.io/pciAddress"}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": devices},
    }


def pinned_claims(
    full: Sequence[Mapping[str, Any]], classes: Mapping[str, str], namespace: str
) -> list[dict[str, Any]]:
    """One claim per device of the full layout that fits only that device, through any of the
    classes (firstAvailable): it fits exactly when some class selects the device, so a device
    the filter dropped though a class selects it fails its claim on the filtered node."""
    claims = []
    for device in _devices(full).values():
        attributes = {key: next(iter(value.values())) for key, value in device["attributes"].items()}
        kind = attributes["deviceType"]
        pin = f'{ATTR}.pciAddress == "{attributes["pciAddress"]}" && {ATTR}.deviceType == "{kind}"'
        if kind == "MIG":
            pin += f' && {ATTR}.migProfile == "{attributes["migProfile"]}"'
            pin += f" && {ATTR}.migPlacementStart == {attributes['migPlacementStart']}"
        alternatives = [
            {"name": f"s{index}", "deviceClassName": name, "selectors": [{"cel": {"expression": pin}}]}
            for index, name in enumerate(classes.values())
        ]
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c0", "namespace": namespace},
                "spec": {"devices": {"requests": [{"name": "r0", "firstAvailable": alternatives}]}},
            }
        )
    return claims


def _amount(value: Any) -> Fraction:
    return Quantity.parse(str(value)).value


def _devices(slices: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {d["name"]: d for item in slices for d in item["spec"].get("devices") or ()}


def invalid_on_full(
    results: Sequence[Mapping[str, Any]],
    filtered: Sequence[Mapping[str, Any]],
    full: Sequence[Mapping[str, Any]],
) -> list[str]:
    """What is wrong, on the full layout, with ``results`` allocated from the filtered one."""
    offered, devices = _devices(filtered), _devices(full)
    left = {
        (counter_set["name"], name): _amount(value["value"])
        for item in full
        for counter_set in item["spec"].get("sharedCounters") or ()
        for name, value in counter_set["counters"].items()
    }
    problems = []
    for result in results:
        name = str(result["device"])
        device, published = devices.get(name), offered.get(name)
        if device is None or published is None:
            problems.append(f"{name}: not a device of both layouts")
            continue
        if any(published.get(key) != device.get(key) for key in ("attributes", "capacity")):
            problems.append(f"{name}: attributes or capacity differ from the full layout")
        for consumption in device.get("consumesCounters") or ():
            for counter, value in consumption["counters"].items():
                key = (consumption["counterSet"], counter)
                left[key] = left.get(key, Fraction(0)) - _amount(value["value"])
                if left[key] < 0:
                    problems.append(f"{name}: counter {key[0]}/{counter} overdrawn on the full layout")
    return problems


def _per_request(results: Sequence[Mapping[str, Any]] | None) -> dict[str, int] | None:
    if results is None:
        return None
    counts: dict[str, int] = {}
    for result in results:
        counts[str(result["request"])] = counts.get(str(result["request"]), 0) + 1
    return counts


def test_filtered_offers_fit_the_same_claims_as_full_offers(real_cluster: RealCluster) -> None:
    token = secrets.token_hex(3)
    run = Run(real_cluster, token)
    run.classes = class_objects(run.prefix, CLASS_SELECTORS)
    class_names = {role: obj["metadata"]["name"] for role, obj in run.classes.items()}
    minor = int(real_cluster.version.split(".")[1])
    rng = random.Random(SEED * 100 + minor)  # noqa: S311 - test data, seeded to be replayable
    claims = pinned_claims(layout("n", minor, None), class_names, run.namespace)
    claims += [random_claim(rng, "c0", run.namespace, class_names) for _ in range(CLAIMS)]
    cases: list[Case] = []
    for index, claim in enumerate(claims):
        for kind, classes in (("full", None), ("filtered", list(run.classes.values()))):
            pair = f"lossless-{token}-{index:03d}"
            node = f"{pair}-{kind}"
            pools = Pools(node, [model for _, model in CARDS], kind, {}, layout(node, minor, classes, pair))
            cases.append(Case(pools, [claim]))
    full_devices, filtered_devices = (len(_devices(case.pools.slices)) for case in cases[:2])
    assert filtered_devices < full_devices, "the classes must leave something out, or nothing is compared"
    disagreements: list[str] = []
    counts = {"allocated": 0, "refused": 0}
    try:
        run.setup(cases)
        decided = run.round(0, cases)
    finally:
        run.cleanup()
    version = real_cluster.version
    for index in range(len(claims)):
        _, full, full_message = decided[2 * index]
        stored, filtered, filtered_message = decided[2 * index + 1]
        for message in (full_message, filtered_message):
            assert not message.startswith(CRASH), f"k8s {version}: claim {index}: {message}"
        counts["allocated" if full is not None else "refused"] += 1
        spec = json.dumps(stored["spec"])
        if _per_request(full) != _per_request(filtered):
            disagreements.append(
                f"claim {index} {spec}: full layout {_per_request(full) or full_message}, "
                f"filtered layout {_per_request(filtered) or filtered_message}"
            )
            continue
        if filtered is not None:
            full_slices, filtered_slices = cases[2 * index].pools.slices, cases[2 * index + 1].pools.slices
            problems = invalid_on_full(filtered, filtered_slices, full_slices)
            if problems:
                disagreements.append(f"claim {index} {spec}: {problems}")
    print(
        f"k8s {version}: {len(claims)} claims, {full_devices} devices full, {filtered_devices} filtered; "
        f"{counts['allocated']} allocated, {counts['refused']} refused on the full layout; "
        f"{len(disagreements)} disagreements"
    )
    assert not disagreements, f"k8s {version}: filtering changed what fits:\n" + "\n".join(disagreements)
    assert counts["allocated"] >= MIN_ALLOCATED * len(claims), f"too few claims fit: {counts}"
    assert counts["refused"] >= MIN_REFUSED * len(claims), f"too few claims refused: {counts}"


def test_the_check_reports_a_device_the_full_layout_lacks_or_its_counters_forbid() -> None:
    """The validity check itself, without a cluster."""
    full = layout("n", 36, None)
    names = list(_devices(full))
    small = next(n for n in names if "-mig-1g-10gb-" in n)
    assert invalid_on_full([{"device": small}], full, full) == []
    assert invalid_on_full([{"device": "gpu-0000-10-00-0-mig-9g-1gb-0"}], full, full)
    changed = json.loads(json.dumps(full))
    for device in (d for item in changed for d in item["spec"].get("devices") or ()):
        device["attributes"]["gpu.deckhouse.io/device"] = {"string": "other"}
    assert invalid_on_full([{"device": small}], changed, full)
    # 3g at 0 and 4g at 0 share memory slices: together they overdraw the card's counters.
    both = [n for n in names if n.startswith("gpu-0000-10-00-0") and n.endswith(("-3g-40gb-0", "-4g-40gb-0"))]
    assert len(both) == 2
    assert invalid_on_full([{"device": n} for n in both], full, full)
