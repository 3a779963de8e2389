# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Counting how many more one-device claims fit (DESIGN.md D12) against the plain way: a fresh
allocation per claim, committed before the next, until one does not fit. The counter's shortcuts
(candidates per selector group, starting after the devices that did not fit, one count per
fingerprint) must give the same numbers on every node, class, layout and use of the cards."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from deckhouse_gpu.domain.allocation.capacity_of import CapacityCounter, Count, probe
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.claims import ClaimError, DeviceClass, parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import Inventory, build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_cluster import example_classes
from testkit.gpu_objects import node_cards
from tests.support.allocation import DRIVER, device, device_class, resource_slice

NODES = {  # name: (model, cards, node labels); two alike nodes share one fingerprint
    "a30-1": ("a30", 2, {}),
    "a30-2": ("a30", 2, {}),
    "h100": ("h100-80gb", 1, {}),
    "a100-shared": ("a100-40gb", 1, {"gpu.deckhouse.io/sharing": "true"}),
    "a100-whole": ("a100-80gb", 2, {"gpu.deckhouse.io/mig": "false"}),
    "t4-1": ("t4", 2, {}),
    "t4-2": ("t4", 2, {}),
}
CLASSES = parse_classes(example_classes())


def _slices(minor: int) -> list[dict[str, Any]]:
    slices = []
    for node, (model, count, labels) in NODES.items():
        slices += render_nodes(node_cards(node, model, count), minor, labels, True, True)
    return slices


def _one(
    device_class: str,
    semantics: Semantics,
    name: str,
    share: str | None = None,
    classes: dict[str, DeviceClass] = CLASSES,
) -> Any:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if share:
        exactly["capacity"] = {"requests": {"sharePercent": share}}
    raw = {
        "metadata": {"namespace": "t", "name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    return parse_claim(raw, classes, semantics)


def _in_use(inventory: Inventory, semantics: Semantics, seed: int) -> AllocatedState:
    """Cards partly taken by claims the scheduler allocated: random classes on random nodes."""
    chance = random.Random(seed)  # noqa: S311 - a repeatable mix, not a secret
    state = AllocatedState()
    allocator = Allocator(inventory, Semantics(semantics.version), CelMatcher())
    names = sorted(CLASSES)
    for index in range(40):
        claim = _one(chance.choice(names), semantics, f"taken-{index}", chance.choice([None, "30", "50"]))
        outcome = allocator.allocate([claim], Node(chance.choice(sorted(NODES))), state)
        for allocation in outcome.allocations or []:
            for result in allocation["devices"]["results"]:
                state.add_result(result, True)
    return state


def _plainly(
    inventory: Inventory,
    semantics: Semantics,
    state: AllocatedState,
    node: str,
    name: str,
    classes: dict[str, DeviceClass] = CLASSES,
) -> int:
    """A fresh allocation per claim, each committed before the next."""
    allocator = Allocator(inventory, semantics, CelMatcher())
    state = AllocatedState(set(state.in_use), {k: dict(v) for k, v in state.shares.items()})
    fits = 0
    while fits < 200:
        claim = _one(name, semantics, f"probe-{fits}", classes=classes)
        outcome = allocator.allocate([claim], Node(node), state)
        if outcome.allocations is None:
            return fits
        for result in outcome.allocations[0]["devices"]["results"]:
            state.add_result(result, True)
        fits += 1
    raise AssertionError("the plain count does not stop")


def _counter(
    inventory: Inventory, semantics: Semantics, state: AllocatedState, classes: list[DeviceClass]
) -> CapacityCounter:
    matcher = CelMatcher()
    groups = SelectorGroups(matcher, [e for c in classes for e in c.selectors])
    return CapacityCounter(Allocator(inventory, semantics, matcher), state, groups)


@pytest.mark.parametrize(("minor", "seed"), [(35, 1), (35, 2), (34, 3), (35, 4)])
def test_counts_match_claims_committed_one_by_one(minor: int, seed: int) -> None:
    semantics = Semantics(f"1.{minor}", strict=True)
    inventory = build_inventory(_slices(minor))
    state = _in_use(inventory, semantics, seed)
    classes = [CLASSES[name] for name in sorted(CLASSES)]
    counter = _counter(inventory, semantics, state, classes)
    probes = [probe(c, counter.allocator) for c in classes]
    seen = 0
    for node in sorted(NODES):
        for count in counter.count(probes, Node(node)):
            assert count.error is None
            assert count.fits == _plainly(inventory, semantics, state, node, count.device_class), count
            seen += count.fits
    assert seen > 0


def _handmade() -> tuple[Inventory, dict[str, DeviceClass]]:
    """Devices the module does not publish but the allocator handles: shares with a default below
    the whole, a tainted device on counters before untainted ones, a share that consumes nothing.
    Four nodes alike but for what the state (or, on n4, the counter set) gives them."""
    share = {
        "value": "100",
        "requestPolicy": {"default": "25", "validRange": {"min": "1", "max": "100", "step": "1"}},
    }
    wide = {
        "value": "100",
        "requestPolicy": {"default": "40", "validRange": {"min": "1", "max": "100", "step": "1"}},
    }
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    devices = [
        device("c1", kind="counted", consumes={"set": {"x": "2"}}, taints=[taint]),
        device("c2", kind="counted", consumes={"set": {"x": "1"}}),
        device("c3", kind="counted", consumes={"set": {"x": "1"}}),
        device("s1", kind="share", multi=True, capacity={"share": share}),
        device("s2", kind="share", multi=True, capacity={"share": wide}),
        device("u1", kind="free", multi=True),
    ]
    sizes = {"n1": "2", "n2": "2", "n3": "2", "n4": "1"}
    slices = [
        resource_slice(f"s-{n}", devices, node=n, pool=f"p-{n}", counters={"set": {"x": x}})
        for n, x in sizes.items()
    ]
    kinds = ("counted", "share", "free")
    raw = [device_class(k, f'device.attributes["{DRIVER}"].kind == "{k}"') for k in kinds]
    return build_inventory(slices), parse_classes(raw)


def test_shares_taints_and_counters_count_as_committed_claims() -> None:
    semantics = Semantics("1.35", strict=True)
    inventory, classes = _handmade()
    state = AllocatedState()
    state.shares[(DRIVER, "p-n2", "s1")] = {"share": Fraction(50)}
    state.in_use.add((DRIVER, "p-n3", "c3"))
    counter = _counter(inventory, semantics, state, list(classes.values()))
    probes = [probe(c, counter.allocator) for c in classes.values()]
    nodes = ("n1", "n2", "n3", "n4")
    found = {(c.node, c.device_class): c for n in nodes for c in counter.count(probes, Node(n))}
    # The tainted c1 never fits and gives its counters back (strict): c2 and c3 share the set;
    # the scheduler's accounting would keep c1's counters charged and place neither.
    assert [found[n, "counted"].fits for n in nodes] == [2, 2, 1, 1]
    assert [found[n, "share"].fits for n in nodes] == [4 + 2, 2 + 2, 4 + 2, 4 + 2]
    assert found["n1", "free"].unlimited
    assert found["n1", "free"].fits == 1
    for node in nodes:
        for name in ("counted", "share"):
            assert found[node, name].fits == _plainly(inventory, semantics, state, node, name, classes)


def test_alike_nodes_are_counted_once_and_a_change_tells_them_apart() -> None:
    semantics = Semantics("1.35", strict=True)
    inventory = build_inventory(_slices(35))
    classes = [CLASSES["gpu-a30"], CLASSES["gpu-a30-mig-1g.6gb"]]
    counter = _counter(inventory, semantics, AllocatedState(), classes)
    probes = [probe(c, counter.allocator) for c in classes]
    first, second = counter.count(probes, Node("a30-1")), counter.count(probes, Node("a30-2"))
    assert [c.fits for c in first] == [c.fits for c in second] == [2, 8]
    assert len(counter._known) == 1
    taken = _counter(inventory, semantics, AllocatedState(), classes)
    taken.state.in_use.add(("gpu.deckhouse.io", "gpus/a30-2", "gpu-0000-10-00-0"))
    assert [c.fits for c in taken.count(probes, Node("a30-1"))] == [2, 8]
    assert [c.fits for c in taken.count(probes, Node("a30-2"))] == [1, 4]
    assert len(taken._known) == 2
    whole = [CLASSES["gpu-t4"]]
    cards = _counter(inventory, semantics, AllocatedState(), whole)
    cards.state.in_use.add(("gpu.deckhouse.io", "gpus/t4-2", "gpu-0000-18-00-0"))
    t4 = [probe(c, cards.allocator) for c in whole]
    assert [c.fits for n in ("t4-1", "t4-2") for c in cards.count(t4, Node(n))] == [2, 1]


def test_a_selector_that_fails_ends_the_count_with_the_allocators_error() -> None:
    semantics = Semantics("1.35", strict=True)
    inventory = build_inventory(_slices(35))
    broken = DeviceClass("broken", ('device.attributes["gpu.deckhouse.io"].migProfile == "1g.6gb"',), ())
    counter = _counter(inventory, semantics, AllocatedState(), [broken])
    (count,) = counter.count([probe(broken, counter.allocator)], Node("a30-1"))
    # The first device of the node is a whole card: it has no migProfile, so the selector fails.
    assert count == Count("broken", "a30-1", 0, count.error)
    assert count.error is not None
    assert "CEL selector failed" in count.error
    assert counter._known[next(iter(counter._known))] == {}  # an error is never reused


def test_counting_needs_strict_semantics() -> None:
    inventory = build_inventory(_slices(35))
    matcher = CelMatcher()
    with pytest.raises(ValueError, match="strict"):
        CapacityCounter(
            Allocator(inventory, Semantics("1.35"), matcher), AllocatedState(), SelectorGroups(matcher, [])
        )


def test_claims_of_all_devices_are_not_placed_one_by_one() -> None:
    semantics = Semantics("1.35", strict=True)
    allocator = Allocator(build_inventory(_slices(35)), semantics, CelMatcher())
    raw = {
        "metadata": {"namespace": "t", "name": "all"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu-a30", "allocationMode": "All"}}
                ]
            }
        },
    }
    claim = parse_claim(raw, CLASSES, semantics)
    work = allocator.start([claim], Node("a30-1"), AllocatedState())
    assert isinstance(work, SearchPass)
    with pytest.raises(ClaimError, match="one by one"):
        allocator.allocate_next([claim], work, AllocatedState())


def test_devices_look_alike_by_what_their_parts_hold_not_by_which_map_holds_it() -> None:
    # A shape is found by the identity of the device's maps: shared ones (SliceParts) are found
    # at once, unshared ones of equal content (a policy: parsed for each device) get equal
    # shapes, and any difference in a part gives another shape.
    policy = {"default": "10", "validRange": {"min": "5", "max": "100", "step": "5"}}
    share = {"sharePercent": {"value": "100", "requestPolicy": policy}}
    other = {"sharePercent": {"value": "100", "requestPolicy": {**policy, "default": "20"}}}
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    devices = [
        device("a", capacity=share, consumes={"c": {"n": "1"}}),
        device("b", capacity=share, consumes={"c": {"n": "1"}}),
        device("c", capacity=other, consumes={"c": {"n": "1"}}),
        device("d", capacity=share, consumes={"c": {"n": "2"}}),
        device("e", capacity=share, consumes={"c": {"n": "1"}}, taints=taint),
        device("f", capacity={"memory": "1Gi"}, consumes={"c": {"n": "1"}}),
        device("g", capacity={"memory": "1024Mi"}, consumes={"c": {"n": "1"}}),
    ]
    inventory = build_inventory([resource_slice("s", devices, counters={"c": {"n": "4"}})])
    found = {d.name: d for d in inventory.slices[0].devices}
    assert found["a"].capacity is not found["b"].capacity
    counter = _counter(inventory, Semantics("1.35", strict=True), AllocatedState(), [])
    shapes = {name: counter.looks.shape(d) for name, d in found.items()}
    assert shapes["a"] == shapes["b"]
    assert len({shapes[name] for name in "acdefg"}) == 6
    assert [counter.looks.shape(found[name]) for name in "abcdefg"] == [shapes[name] for name in "abcdefg"]
