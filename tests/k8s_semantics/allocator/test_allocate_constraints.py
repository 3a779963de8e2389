# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A claim's constraints through whole allocations: matchAttribute and distinctAttribute
(KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import V134, V135
from tests.support.allocation import World, claim_object, device, exactly, resource_slice


def test_match_attribute_keeps_devices_of_one_claim_alike() -> None:
    devices = [
        device("a", attributes={"model": "A30"}),
        device("b", attributes={"model": "H100"}),
        device("c", attributes={"model": "A30"}),
    ]
    same = {"constraints": [{"matchAttribute": "gpu.deckhouse.io/model"}]}
    world = World([resource_slice("s", devices)])
    assert world.devices(claim_object("x", exactly("gpu", count=2), **same)) == [["a", "c"]]
    assert world.devices(claim_object("y", exactly("gpu", count=2), **same)) is None


def test_match_attribute_rejects_devices_without_the_attribute() -> None:
    world = World([resource_slice("s", [device("a"), device("b", attributes={"model": "A30"})])])
    constraint = {"constraints": [{"matchAttribute": "gpu.deckhouse.io/model"}]}
    assert world.devices(claim_object("x", exactly("gpu"), **constraint)) == [["b"]]


def test_match_attribute_applies_only_to_the_requests_it_names() -> None:
    devices = [device("a", attributes={"model": "A30"}), device("b", attributes={"model": "H100"})]
    constraint = {"constraints": [{"requests": ["one"], "matchAttribute": "gpu.deckhouse.io/model"}]}
    world = World([resource_slice("s", devices)])
    assert world.devices(claim_object("x", exactly("one"), exactly("two"), **constraint)) == [["a", "b"]]


@pytest.mark.parametrize(("semantics", "expected"), [(V135, [["a", "c"]]), (V134, [["a", "b"]])])
def test_distinct_attribute_compares_values_on_135_only(
    semantics: Semantics, expected: list[list[str]]
) -> None:
    # 1.34 compares pointers to the values, which never match across devices (KUBERNETES-FACTS.md F4.4).
    devices = [
        device("a", attributes={"root": "r0"}),
        device("b", attributes={"root": "r0"}),
        device("c", attributes={"root": "r1"}),
    ]
    constraint = {"constraints": [{"distinctAttribute": "gpu.deckhouse.io/root"}]}
    world = World([resource_slice("s", devices)], semantics=semantics)
    assert world.devices(claim_object("x", exactly("one"), exactly("two"), **constraint)) == [
        [expected[0][0], expected[0][1]]
    ]
