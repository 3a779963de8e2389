# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Counter maps and capacities parsed once per build and shared (``SliceParts``): devices that
declare the same ones get the same read-only map, and nothing else changes: other texts, types or
policies are parsed as ever, and a malformed part is refused as ever, whatever came before it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.resources.model import build_inventory, parse_slice
from deckhouse_gpu.k8s_semantics.resources.slice_parts import SliceParts
from tests.support.allocation import device, resource_slice

MIG = {"memory": "10Gi", "memory-slice-0": "1", "multiprocessors": "16"}


def _devices(*slices: dict[str, Any]) -> dict[str, Any]:
    inventory = build_inventory(slices)
    assert inventory.problems == []
    return {d.name: d for s in inventory.slices for d in s.devices}


def test_equal_parts_are_one_read_only_map_across_slices() -> None:
    found = _devices(
        resource_slice("s1", [device("a", consumes={"card-0": MIG}, capacity={"memory": "10Gi"})], node="n1"),
        resource_slice("s2", [device("b", consumes={"card-1": MIG}, capacity={"memory": "10Gi"})], node="n2"),
    )
    a, b = found["a"], found["b"]
    assert a.consumes[0][1] is b.consumes[0][1]
    assert a.capacity is b.capacity
    assert (a.consumes[0][0], b.consumes[0][0]) == ("card-0", "card-1")  # the set's name is the device's
    assert {n: q.value for n, q in a.consumes[0][1].items()} == {
        "memory": 10 * 2**30,
        "memory-slice-0": 1,
        "multiprocessors": 16,
    }
    with pytest.raises(TypeError):
        a.consumes[0][1]["memory"] = b.consumes[0][1]["multiprocessors"]
    with pytest.raises(TypeError):
        a.capacity["memory"] = b.capacity["memory"]
    assert b.consumes[0][1]["memory"].value == 10 * 2**30


def test_parts_that_differ_in_anything_are_parsed_for_themselves() -> None:
    variants: dict[str, dict[str, Any]] = {
        "text": {"memory": "10240Mi"},  # the same amount, written otherwise: its own text stays
        "value": {"memory": "20Gi"},
        "order": {"multiprocessors": "16", "memory": "10Gi"},
        "int": {"memory": 10 * 2**30},
        "fewer": {"memory": "10Gi"},
    }
    found = _devices(
        resource_slice(
            "s",
            [device("plain", consumes={"c": MIG})]
            + [device(name, consumes={"c": counters}) for name, counters in variants.items()],
        )
    )
    maps = {name: d.consumes[0][1] for name, d in found.items()}
    assert len({id(m) for m in maps.values()}) == len(maps)
    assert maps["text"]["memory"].text == "10240Mi"
    assert maps["value"]["memory"].value == 20 * 2**30
    assert list(maps["order"]) == ["multiprocessors", "memory"]
    assert maps["int"]["memory"].value == Fraction(10 * 2**30)
    assert list(maps["fewer"]) == ["memory"]


def test_the_part_at_the_same_place_in_the_next_slice_is_compared_in_order() -> None:
    # Slices of alike cards repeat their parts at the same places: the one seen there last is
    # reused when equal, names in the same order; equal maps in another order keep their own.
    reordered = dict(reversed(MIG.items()))
    cards = [
        resource_slice(f"s{i}", [device(f"d{i}", consumes={"c": counters}, capacity={"m": "1", "n": "2"})])
        for i, counters in enumerate([MIG, MIG, reordered, MIG, {**MIG, "memory": "20Gi"}])
    ]
    found = _devices(*cards)
    maps = [found[f"d{i}"].consumes[0][1] for i in range(5)]
    assert maps[0] is maps[1] is maps[3]
    assert list(maps[2]) == list(reordered) != list(MIG)
    assert maps[4]["memory"].value == 20 * 2**30
    flipped = _devices(cards[0], resource_slice("s9", [device("d9", capacity={"n": "2", "m": "1"})]))
    assert list(flipped["d9"].capacity) == ["n", "m"]
    assert list(flipped["d0"].capacity) == ["m", "n"]


@pytest.mark.parametrize(
    ("first", "second", "error"),
    [
        # True == 1 and 1.0 == 1 in a tuple: a key of them must never find the other's map.
        (1, True, "True is not a quantity"),
        (1, 1.0, "1.0 is not a quantity"),
        ("1", "x", "'x' is not a Kubernetes quantity"),
        ("1", None, "None is not a quantity"),
    ],
)
def test_a_malformed_part_is_refused_whatever_was_parsed_before(first: Any, second: Any, error: str) -> None:
    good = resource_slice("good", [device("a", consumes={"c": {"n": first}}, capacity={"m": first})])
    for broken in (
        resource_slice("bad-counters", [device("b", consumes={"c": {"n": second}})], node="n2"),
        resource_slice("bad-capacity", [device("b", capacity={"m": second})], node="n2"),
    ):
        inventory = build_inventory([good, broken])
        assert [s.name for s in inventory.slices] == ["good"]
        assert len(inventory.problems) == 1
        assert error in inventory.problems[0]


def test_capacities_with_a_policy_are_parsed_for_each_device() -> None:
    policy = {"default": "10", "validRange": {"min": "5", "max": "100", "step": "5"}}
    share = {"sharePercent": {"value": "100", "requestPolicy": policy}}
    found = _devices(resource_slice("s", [device("a", capacity=share), device("b", capacity=share)]))
    a, b = found["a"].capacity["sharePercent"], found["b"].capacity["sharePercent"]
    assert a == b
    assert a.policy is not None
    assert a.policy.step is not None
    assert a.policy.step.value == 5


def test_errors_keep_their_order_and_words() -> None:
    # The capacity is read before the counters, as before the sharing: its error is the one named.
    raw = device("d", capacity={"memory": "bad"}, consumes={"c": {"n": "worse"}})
    with pytest.raises(ValueError, match=r"d\.capacity\.memory: 'bad'"):
        parse_slice(resource_slice("s", [raw]), SliceParts())
    raw = device("d", consumes={"c": {"n": "worse"}})
    with pytest.raises(ValueError, match=r"d\.consumesCounters\.n: 'worse'"):
        parse_slice(resource_slice("s", [raw]))
    shared = resource_slice("s", counters={"card": {"n": "x"}})
    with pytest.raises(ValueError, match=r"sharedCounters card\.n: 'x'"):
        parse_slice(shared)


def test_attributes_are_read_when_asked_as_before() -> None:
    raw = device("d", attributes={"model": "A30", "index": 2})
    raw["attributes"]["broken"] = "not a map"
    (found,) = _devices(resource_slice("s", [raw])).values()
    assert dict(found.attributes) == {
        "kind": {"string": "gpu"},
        "model": {"string": "A30"},
        "index": {"int": 2},
    }
