# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Allocating devices: exact counts in slice order, all claims of a pod together, All mode,
firstAvailable, admin access and selectors (KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import gpus
from tests.support.allocation import (
    World,
    claim_object,
    device,
    device_class,
    exactly,
    first_available,
    resource_slice,
)


def test_exact_count_takes_devices_in_slice_order_and_never_twice() -> None:
    world = World([resource_slice("s", gpus("a", "b", "c"))])
    assert world.devices(claim_object("one", exactly("gpu", count=2))) == [["a", "b"]]
    assert world.devices(claim_object("two", exactly("gpu", count=2))) is None
    assert world.devices(claim_object("three", exactly("gpu"))) == [["c"]]


def test_claims_of_one_pod_fit_together_or_not_at_all() -> None:
    world = World([resource_slice("s", gpus("a", "b"))])
    assert (
        world.devices(claim_object("x", exactly("gpu")), claim_object("y", exactly("gpu", count=2))) is None
    )
    assert world.state.in_use == set()
    assert world.devices(claim_object("x", exactly("gpu")), claim_object("y", exactly("gpu"))) == [
        ["a"],
        ["b"],
    ]


def test_all_mode_takes_every_matching_device_and_needs_at_least_one() -> None:
    world = World([resource_slice("s", [*gpus("a", "b"), device("nic", kind="nic")])])
    assert world.devices(claim_object("all", exactly("gpu", allocationMode="All"))) == [["a", "b"]]
    assert world.devices(claim_object("again", exactly("gpu", allocationMode="All"))) is None


def test_all_mode_fails_when_one_of_its_devices_is_in_use() -> None:
    world = World([resource_slice("s", gpus("a", "b"))])
    world.devices(claim_object("first", exactly("gpu")))
    assert world.devices(claim_object("all", exactly("gpu", allocationMode="All"))) is None


def test_first_available_tries_subrequests_in_order_with_the_whole_search() -> None:
    world = World(
        [resource_slice("s", [device("big", kind="big"), *gpus("a", "b")])],
        [device_class("gpu"), device_class("big", 'device.attributes["gpu.deckhouse.io"].kind == "big"')],
    )
    wanted = claim_object(
        "c",
        first_available(
            "r", {"name": "large", "deviceClassName": "big"}, {"name": "small", "deviceClassName": "gpu"}
        ),
        exactly("other", "big"),
    )
    outcome = world.allocate(wanted)
    assert outcome.allocations is not None
    # "large" would take the only big device that "other" needs: the search goes on to "small".
    assert [(r["request"], r["device"]) for r in outcome.allocations[0]["devices"]["results"]] == [
        ("r/small", "a"),
        ("other", "big"),
    ]


def test_admin_access_gets_a_device_in_use_and_leaves_it_in_use() -> None:
    world = World([resource_slice("s", gpus("a"))])
    world.devices(claim_object("user", exactly("gpu")))
    outcome = world.allocate(claim_object("admin", exactly("gpu", adminAccess=True)))
    assert outcome.allocations is not None
    (result,) = outcome.allocations[0]["devices"]["results"]
    assert result["adminAccess"] is True
    world.commit(outcome)
    assert world.devices(claim_object("monitor", exactly("gpu", adminAccess=True))) == [["a"]]


def test_selectors_of_the_class_and_of_the_request_both_apply() -> None:
    world = World(
        [resource_slice("s", [device("a", attributes={"mem": 10}), device("b", attributes={"mem": 40})])]
    )
    expression = 'device.attributes["gpu.deckhouse.io"].mem >= 20'
    big: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    assert world.devices(claim_object("c", exactly("gpu", **big))) == [["b"]]


def test_devices_with_binding_conditions_are_not_offered_without_that_feature() -> None:
    world = World([resource_slice("s", [device("a", bindingConditions=["Ready"]), device("b")])])
    assert world.devices(claim_object("c", exactly("gpu"))) == [["b"]]


def _picked(world: World, wanted: dict[str, Any]) -> list[tuple[str, str]] | None:
    outcome = world.allocate(wanted)
    assert outcome.error is None, outcome.error
    if outcome.allocations is None:
        return None
    return [(r["request"], r["device"]) for r in outcome.allocations[0]["devices"]["results"]]


BIG_OR_ALL = (device_class("gpu"), device_class("big", 'device.attributes["gpu.deckhouse.io"].kind == "big"'))


def test_an_all_subrequest_after_the_first_lends_its_selection_to_the_one_before_on_134_and_135() -> None:
    """The scheduler judges the "All" subrequest under the selection cache slot of the subrequest
    before it (seen on the real 1.35.6 scheduler): that one then selects what "All" selects."""
    wanted = claim_object(
        "c",
        first_available(
            "r",
            {"name": "large", "deviceClassName": "big"},
            {"name": "any", "deviceClassName": "gpu", "allocationMode": "All"},
        ),
    )
    slices = [resource_slice("s", gpus("a", "b"))]
    for version, picked in (
        ("1.34", [("r/large", "a")]),
        ("1.35", [("r/large", "a")]),
        ("1.36", [("r/any", "a"), ("r/any", "b")]),
    ):
        assert _picked(World(slices, list(BIG_OR_ALL), Semantics(version)), wanted) == picked, version


def test_an_all_subrequest_after_the_first_goes_on_as_the_first_after_one_device_on_134_and_135() -> None:
    """After its first device the scheduler's next step forgets the subrequest it was in and goes on
    with the first one's count (seen on the real 1.35.6 scheduler): one device where 1.36 gives all."""
    lacking = {"name": "shared", "deviceClassName": "gpu", "capacity": {"requests": {"sharePercent": "30"}}}
    wanted = claim_object(
        "c", first_available("r", lacking, {"name": "any", "deviceClassName": "gpu", "allocationMode": "All"})
    )
    slices = [resource_slice("s", gpus("a", "b"))]
    for version, picked in (
        ("1.34", [("r/any", "a")]),
        ("1.35", [("r/any", "a")]),
        ("1.36", [("r/any", "a"), ("r/any", "b")]),
    ):
        assert _picked(World(slices, list(BIG_OR_ALL), Semantics(version)), wanted) == picked, version
