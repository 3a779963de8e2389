# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which pools the allocator uses: generations, incomplete and invalid pools per version and
the node selection of slices and devices (KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import V134, V135, gpus
from tests.support.allocation import World, claim_object, device, exactly, resource_slice


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = resource_slice("old", gpus("a"), generation=1)
    new = resource_slice("new", gpus("b"), generation=2)
    assert World([old, new]).devices(claim_object("c", exactly("gpu"))) == [["b"]]


@pytest.mark.parametrize(("semantics", "expected"), [(V134, [["a"]]), (V135, None)])
def test_incomplete_pools_serve_exact_count_on_134_only(semantics: Semantics, expected: object) -> None:
    world = World([resource_slice("s1", gpus("a"), count=2)], semantics=semantics)
    assert world.devices(claim_object("c", exactly("gpu"))) == expected


@pytest.mark.parametrize("semantics", [V134, V135])
def test_all_mode_on_an_incomplete_pool_is_an_error(semantics: Semantics) -> None:
    world = World([resource_slice("s1", gpus("a"), count=2)], semantics=semantics)
    outcome = world.allocate(claim_object("c", exactly("gpu", allocationMode="All")))
    assert outcome.allocations is None
    assert outcome.error == "claim ns/c request gpu: allocationMode All needs complete, valid pools"


def test_135_drops_a_pool_whose_newer_generation_is_still_being_published() -> None:
    # Generation 2 has one of its two slices on another node so far: the pool is obsolete here.
    slices = [
        resource_slice("n1-g1", gpus("a"), generation=1, count=1),
        resource_slice("n2-g2", gpus("b"), node="n2", generation=2, count=2),
    ]
    assert World(slices, semantics=V135).devices(claim_object("c", exactly("gpu"))) == [["a"]]
    slices[1]["spec"]["nodeName"] = "n1"
    assert World(slices, semantics=V135).devices(claim_object("c", exactly("gpu"))) is None


def test_duplicate_device_names_abort_on_134() -> None:
    world = World(
        [resource_slice("s1", gpus("a"), count=2), resource_slice("s2", gpus("a"), count=2)], semantics=V134
    )
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == "pool gpu.deckhouse.io/p1 is invalid: duplicate device name a"


def test_invalid_pools_are_skipped_on_135_and_named_when_nothing_fits() -> None:
    bad = [resource_slice("s1", gpus("a"), count=2), resource_slice("s2", gpus("a"), count=2)]
    good = resource_slice("g", gpus("b"), pool="p2")
    assert World([*bad, good], semantics=V135).devices(claim_object("c", exactly("gpu"))) == [["b"]]
    outcome = World(bad, semantics=V135).allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: duplicate device name a"
    )


def test_135_counter_references_to_missing_sets_make_the_pool_invalid() -> None:
    counters = resource_slice("c", counters={"card": {"memory": "10Gi"}}, count=2)
    devices = resource_slice("d", [device("a", consumes={"nope": {"memory": "1Gi"}})], count=2)
    outcome = World([counters, devices], semantics=V135).allocate(claim_object("c", exactly("gpu")))
    assert outcome.error == (
        "invalid resource pools were encountered: gpu.deckhouse.io/p1: device a consumes from missing "
        "counter set nope"
    )


@pytest.mark.parametrize(
    ("selection", "fits"),
    [
        ({"nodeName": "n1"}, True),
        ({"nodeName": "n2"}, False),
        ({"allNodes": True}, True),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}
                    ]
                }
            },
            True,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]
                }
            },
            False,
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                    ]
                }
            },
            True,
        ),
        ({}, False),  # nothing set: a future extension the scheduler ignores
    ],
)
def test_slice_node_selection(selection: dict[str, Any], fits: bool) -> None:
    world = World([resource_slice("s", gpus("a"), node=None, **selection)])
    found = world.allocate(claim_object("c", exactly("gpu")), labels={"gpu": "yes"})
    assert (found.allocations is not None) is fits


def test_per_device_node_selection_needs_partitionable_devices() -> None:
    slices = [
        resource_slice(
            "s",
            [device("a", nodeName="n2"), device("b", nodeName="n1")],
            node=None,
            perDeviceNodeSelection=True,
        )
    ]
    assert World(slices).devices(claim_object("c", exactly("gpu"))) == [["b"]]
    off = Semantics(partitionable=False)
    assert World(slices, semantics=off).devices(claim_object("c", exactly("gpu"))) is None


@pytest.mark.parametrize(("version", "expected"), [("1.34", [["p"]]), ("1.35", [["p"]]), ("1.36", [["d"]])])
def test_136_searches_a_pools_slices_in_name_order(version: str, expected: object) -> None:
    """1.36 sorts a pool's slices by name (kubernetes/kubernetes #136641), so the module's
    "devices-0" slice comes before "partitionable-0" whatever order the slices are given in; 1.34
    and 1.35 have no order of their own (the informer's), and ours is the order given. Found by
    tests/real/test_allocator_vs_scheduler.py."""
    slices = [
        resource_slice("n1-partitionable-0", gpus("p"), count=2),
        resource_slice("n1-devices-0", gpus("d"), count=2),
    ]
    world = World(slices, semantics=Semantics(version))
    assert world.devices(claim_object("c", exactly("gpu"))) == expected
