# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The documented DeviceClass and claim examples (docs/examples) and what the driver really publishes,
shared by the checks of tests/module/test_deviceclass_*.py.

The example objects, their selectors compiled by the module's DRA CEL engine
(deckhouse_gpu/k8s_semantics/cel), the functions and device fields a 1.34 API server accepts, the pools
rendered from simulated cards of each model on four kinds of node, the offers each card is meant to
give, and what each example class is meant to select. Bind ``cards`` in a test module
(``cards = deviceclass_examples.cards``) for pytest to find the fixture there.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.domain.naming import mig_name, physical_name
from deckhouse_gpu.k8s_semantics.cel import CompiledSelector, SelectorEngine, SelectorError, device_view
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.simulator.scenario import parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
DRIVER = "gpu.deckhouse.io"
MODELS = ("a30", "a100-40gb", "a100-80gb", "h100-80gb", "l40s", "t4")  # the simulator's models
ADDRESSES = {"a30": ("0000:17:00.0", "0000:31:00.0")}  # two cards in one pool; one elsewhere
SHARING, MIG_LABEL = f"{DRIVER}/sharing", f"{DRIVER}/mig"

# What a 1.34 API server accepts in new expressions: libraries introduced before 1.34
# (KUBERNETES-FACTS.md F3.2; its NewExpressions environment is that of 1.33). Extend it only
# with functions that entry dates before 1.34: ext.Lists v3, for one, is refused.
ALLOWED_FUNCTIONS = {
    # CEL standard functions and macros
    *("has", "size", "int", "uint", "double", "string", "bool", "matches", "startsWith", "endsWith"),
    *("contains", "all", "exists", "exists_one", "map", "filter"),
    # Kubernetes quantity library (1.28)
    *("quantity", "isQuantity", "sign", "compareTo", "isGreaterThan", "isLessThan", "add", "sub"),
    *("isInteger", "asInteger", "asApproximateFloat"),
    # Kubernetes semver library (1.33)
    *("semver", "isSemver", "major", "minor", "patch"),
}
# allowMultipleAllocations is declared only with DRAConsumableCapacity on; v1.34.9 with the gate
# on accepted it in a new DeviceClass (KUBERNETES-FACTS.md F9).
DEVICE_FIELDS = {"driver", "attributes", "capacity", "allowMultipleAllocations"}


def example_docs(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc is not None]


CLASSES = {c["metadata"]["name"]: c for c in example_docs("deviceclasses.yaml")}
CLAIMS = example_docs("claims.yaml")


ENGINE = SelectorEngine()


def selectors_of(spec: dict[str, Any]) -> list[CompiledSelector]:
    return [ENGINE.compile(entry["cel"]["expression"]) for entry in spec.get("selectors") or []]


SELECTORS = {name: selectors_of(c["spec"]) for name, c in CLASSES.items()}


# --- the rendered pools and what they are meant to hold ------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    labels: tuple[tuple[str, str], ...] = ()
    partitionable: bool = True  # the API server keeps the fields (DESIGN.md D3 fallback when not)
    consumable: bool = True

    @property
    def shared(self) -> bool:  # DESIGN.md D6: opt-in per node
        return dict(self.labels).get(SHARING) == "true" and self.consumable

    @property
    def mig(self) -> bool:  # DESIGN.md D6: never beside shared offers; off per node; needs counters
        return not self.shared and dict(self.labels).get(MIG_LABEL) != "false" and self.partitionable


VARIANTS = (
    Variant("plain"),
    Variant("sharing", ((SHARING, "true"),)),
    Variant("mig-off", ((MIG_LABEL, "false"),)),
    Variant("fallback", ((SHARING, "true"),), partitionable=False, consumable=False),
)


@dataclass(frozen=True)
class Offer:
    node: str
    name: str
    model: str
    kind: str  # "whole", "shared" or "mig"
    memory_mib: int
    profile: str | None = None


@cache
def published_cards() -> tuple[dict[str, Any], ...]:
    """PhysicalGPUs as the real components write them, from a simulated node per model.

    The simulation runs once per test session; each test module gets its own copy (``cards``)."""
    nodes = [
        {
            "name": f"node-{m}",
            "gpus": [{"model": m, "address": a} for a in ADDRESSES.get(m, ("0000:3b:00.0",))],
        }
        for m in MODELS
    ]
    cluster = SimulatedCluster(parse_scenario("deviceclasses", yaml.safe_dump({"nodes": nodes})))
    try:
        cluster.start()
        # settle() cannot see a watch event still on its way to a loop (a loaded machine delays
        # the delivery past its quiet period), so wait for what this fixture needs, within a bound.
        deadline = time.monotonic() + 60
        while True:
            found = cluster.physical_gpus()
            unread = [
                (c["metadata"]["name"], c["status"])
                for c in found
                if not c["status"].get("capabilities", {}).get("memoryMiB")
            ]
            if not unread or time.monotonic() > deadline:
                break
            cluster.settle()
    finally:
        cluster.close()
    assert len(found) == 7
    assert unread == [], "a card was not read"
    return tuple(found)


@pytest.fixture(scope="module")
def cards() -> list[dict[str, Any]]:
    """PhysicalGPUs as the real components write them, from a simulated node per model."""
    return copy.deepcopy(list(published_cards()))


def intended_offers(cards: list[dict[str, Any]], variant: Variant) -> set[Offer]:
    """The offers DESIGN.md D2, D3 and D6 say each card gives, named as DESIGN.md D5 says."""
    offers = set()
    for card in cards:
        node, address = card["status"]["nodeInfo"]["nodeName"], card["status"]["pciInfo"]["address"]
        model, caps = node.removeprefix("node-"), card["status"]["capabilities"]
        kind = "shared" if variant.shared else "whole"
        offers.add(Offer(node, physical_name(address), model, kind, caps["memoryMiB"]))
        profiles = ((caps.get("nvidia") or {}).get("mig") or {}).get("profiles") or []
        for profile in profiles if variant.mig else []:
            for placement in profile["placements"]:
                name = mig_name(address, profile["name"], placement["start"])
                offers.add(Offer(node, name, model, "mig", profile["memoryMiB"], profile["name"]))
    return offers


def rendered_devices(
    cards: list[dict[str, Any]], minor: int, variant: Variant
) -> Iterator[tuple[str, dict[str, Any]]]:
    labels = dict(variant.labels)
    for piece in render_nodes(cards, minor, labels, variant.partitionable, variant.consumable):
        for device in piece["spec"].get("devices") or []:
            yield piece["spec"]["nodeName"], device


FOREIGN = [  # another driver's GPUs in the same cluster, with names that look like ours
    {"name": "gpu-0", "attributes": {"deviceType": {"string": "Physical"}, "device": {"string": "a30-pcie"}}},
    {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}}, "capacity": {"memory": {"value": "80Gi"}}},
]


@cache
def _evaluate(class_name: str, view_key: str) -> bool | str:
    """Memoized: the same device content recurs across versions and variants."""
    device = {key: value for key, value in json.loads(view_key).items() if value is not None}
    view = device_view(device["driver"], device)
    try:
        return all(s.matches(view) for s in SELECTORS[class_name])
    except SelectorError as error:
        return str(error)


def selected(
    class_name: str, devices: list[tuple[str, str, dict[str, Any]]]
) -> tuple[set[tuple[str, str]], list[str]]:
    chosen, errors = set(), []
    for node, driver, device in devices:
        seen = {key: device.get(key) for key in ("attributes", "capacity", "allowMultipleAllocations")}
        key = json.dumps({**seen, "driver": driver}, sort_keys=True)  # what CEL sees of the device
        result = _evaluate(class_name, key)
        if isinstance(result, str):
            errors.append(f"{node}/{device['name']}: {result}")
        elif result:
            chosen.add((node, device["name"]))
    return chosen, errors


def _offers_of(
    model: str, kinds: tuple[str, ...], profile_slug: str | None = None
) -> Callable[[Offer], bool]:
    def wanted(offer: Offer) -> bool:
        slug = (offer.profile or "").replace("+", "-")
        return offer.model == model and offer.kind in kinds and profile_slug in (None, slug)

    return wanted


def intent(class_name: str) -> Callable[[Offer], bool]:
    """What each example class is for, from its name."""
    special: dict[str, Callable[[Offer], bool]] = {
        "gpu-memory-40gi": lambda o: o.kind != "mig" and o.memory_mib >= 40 * 1024,
        "gpu-mig": lambda o: o.kind == "mig",
        "gpu-shared": lambda o: o.kind == "shared",
    }
    if class_name in special:
        return special[class_name]
    for model in MODELS:
        if class_name == f"gpu-{model}":
            return _offers_of(model, ("whole", "shared"))
        if class_name == f"gpu-{model}-shared":
            return _offers_of(model, ("shared",))
        if class_name.startswith(f"gpu-{model}-mig-"):
            return _offers_of(model, ("mig",), class_name.removeprefix(f"gpu-{model}-mig-"))
    raise AssertionError(f"{class_name}: no intent known for this example class; add one here")


def templates() -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in CLAIMS if c["kind"] == "ResourceClaimTemplate"}
