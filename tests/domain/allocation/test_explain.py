# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""explain: its words per rule, and that it agrees with the search device by device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deckhouse_gpu.domain.allocation.explain import device_reason, explain
from deckhouse_gpu.k8s_semantics.allocator import constraints, counters, rules
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.reasons import Reason, Rule
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.one_device import Judged
from tests.support.allocation import (
    DRIVER,
    World,
    claim_object,
    device,
    device_class,
    exactly,
    resource_slice,
)


def lines(world: World, *claims: dict[str, Any]) -> list[str]:
    return explain(world.allocator, [world.claim(c) for c in claims], Node("n1"), world.state)


def test_every_reason_in_words() -> None:
    devices = [
        device("bound", bindingConditions=["Ready"]),
        device("used"),
        device("nic", kind="nic"),
        device("small", attributes={"memory": 10}),
        device("part", consumes={"c": {"x": "3"}}, attributes={"memory": 40}),
        device(
            "tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}], attributes={"memory": 40}
        ),
        device("fits", attributes={"memory": 40}),
    ]
    world = World([resource_slice("s", devices, counters={"c": {"x": "2"}})])
    world.state.in_use.add((DRIVER, "p1", "used"))
    big = [{"cel": {"expression": f'device.attributes["{DRIVER}"].memory >= 40'}}]
    assert lines(world, claim_object("c", exactly("gpu", count=2, selectors=big))) == [
        "claim ns/c request gpu (wants 2): 1 of 7 devices fit alone; 1 needs binding conditions; 1 in use; "
        "1 not of DeviceClass gpu; "
        '1 request selector false: device.attributes["gpu.deckhouse.io"].memory >= 40; '
        "1 counters exhausted (c/x: needs 3, 2 left); 1 taint k=v:NoSchedule not tolerated"
    ]


def test_capacity_and_counter_sets_in_words() -> None:
    card = {"share": {"value": "4", "requestPolicy": {"validRange": {"min": "1", "max": "2"}}}}
    devices = [
        device("plain"),
        device("full", multi=True, capacity={"share": "4"}),
        device("strict", multi=True, capacity=card),
        device("elsewhere", capacity={"share": "4"}, consumes={"other": {"x": "1"}}),
    ]
    world = World([resource_slice("s", devices, counters={"c": {"x": "2"}})], semantics=Semantics("1.34"))
    world.state.shares[(DRIVER, "p1", "full")] = {"share": Fraction(3)}
    asks = claim_object("c", exactly("gpu", capacity={"requests": {"share": "3"}}))
    assert lines(world, asks) == [
        "claim ns/c request gpu (wants 1): 0 of 4 devices fit alone; 1 no capacity share; "
        "1 capacity share: needs 3, 1 left; 1 capacity share: 3 breaks the request policy; "
        "1 counter set other not found"  # its capacity fits: the counters are judged next
    ]


def test_a_selector_that_cannot_be_evaluated_is_a_reason_not_an_error() -> None:
    world = World([resource_slice("s", [device("a")])], [device_class("bad", "device.nope == 1")])
    (line,) = lines(world, claim_object("c", exactly("r", "bad")))
    assert line.startswith("claim ns/c request r (wants 1): 0 of 1 devices fit alone; 1 selector error: ")


def test_admin_access_is_not_stopped_by_devices_in_use() -> None:
    world = World([resource_slice("s", [device("a"), device("b")])])
    world.state.in_use.add((DRIVER, "p1", "a"))
    assert lines(world, claim_object("c", exactly("gpu", adminAccess=True, count=3))) == [
        "claim ns/c request gpu (wants 3): 2 of 2 devices fit alone"
    ]


def test_capacity_is_judged_before_counters_as_the_scheduler_does() -> None:
    """1.34 too: its candidate loop checks capacity before allocateDevice charges counters (the
    real 1.34.9 scheduler gave a later subrequest a card an earlier one's capacity misfit would
    have charged otherwise, tests/real/test_allocator_vs_scheduler.py)."""
    card = device("card", multi=True, capacity={"share": "4"}, consumes={"c": {"x": "4"}})
    slices = [
        resource_slice("s", [card, device("used", consumes={"c": {"x": "1"}})], counters={"c": {"x": "4"}})
    ]
    asks = claim_object("c", exactly("gpu", capacity={"requests": {"share": "5"}}))
    for version in ("1.34", "1.35", "1.36"):
        world = World(slices, semantics=Semantics(version))
        world.state.in_use.add((DRIVER, "p1", "used"))
        assert "capacity share: needs 5, 4 left" in lines(world, asks)[0]


def test_a_device_without_a_constraint_s_attribute_does_not_fit_alone() -> None:
    devices = [device("a", attributes={"card": "x"}), device("b")]
    world = World([resource_slice("s", devices)])
    constrained = claim_object("c", exactly("gpu"), constraints=[{"matchAttribute": f"{DRIVER}/card"}])
    assert lines(world, constrained) == [
        "claim ns/c request gpu (wants 1): 1 of 2 devices fit alone; "
        f"1 no attribute {DRIVER}/card for matchAttribute; "
        "those do not fit together with the other requests or the constraints"
    ]


def test_the_search_never_words_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def every(cls: type[Reason]) -> list[type[Reason]]:
        return [cls, *(k for sub in cls.__subclasses__() for k in every(sub))]

    def refuse(self: Reason) -> str:
        raise AssertionError(f"the search worded {type(self).__name__}")

    for cls in every(Reason):
        monkeypatch.setattr(cls, "__str__", refuse)
    devices = [
        device("used"),
        device("nic", kind="nic"),
        device("part", consumes={"c": {"x": "3"}}),
        device("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        device("card", multi=True, capacity={"share": "1"}),
    ]
    world = World([resource_slice("s", devices, counters={"c": {"x": "2"}})])
    world.state.in_use.add((DRIVER, "p1", "used"))
    outcome = world.allocate(
        claim_object("c", exactly("gpu", count=2, capacity={"requests": {"share": "2"}}))
    )
    assert outcome.error is None
    assert outcome.allocations is None


# -- explain and the search agree ------------------------------------------------------------------


@dataclass(frozen=True)
class Dev:
    kind: str
    size: int
    card: str | None
    uses: int
    multi: bool
    policy: bool
    taint: str | None
    bound: bool
    held: str  # "": free, "use": in use, "share": a share of 2 taken


def devs() -> st.SearchStrategy[list[Dev]]:
    one = st.builds(
        Dev,
        st.sampled_from(("a", "b")),
        st.integers(1, 2),
        st.sampled_from(("x", "y", None)),
        st.integers(0, 3),
        st.booleans(),
        st.booleans(),
        st.sampled_from((None, "NoSchedule", "PreferNoSchedule")),
        st.sampled_from((False,) * 7 + (True,)),  # rare: it hides every later rule
        st.sampled_from(("", "", "", "use", "share")),
    )
    return st.lists(one, min_size=1, max_size=5)


def request_bodies() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"deviceClassName": st.sampled_from(("any", "any", "a", "b"))},
        optional={
            "capacity": st.integers(1, 5).map(lambda n: {"requests": {"share": str(n)}}),
            "selectors": st.just([{"cel": {"expression": f'device.attributes["{DRIVER}"].size == 2'}}]),
            "tolerations": st.just([{"key": "k", "operator": "Exists"}]),
            "adminAccess": st.just(True),
        },
    )


MOSTLY = st.sampled_from((True, True, True, False))  # a gate that is off hides its rule
SEMANTICS = st.builds(
    Semantics,
    st.sampled_from(("1.34", "1.35")),
    partitionable=MOSTLY,
    consumable=MOSTLY,
    taints=MOSTLY,
    strict=st.booleans(),
)
CONSTRAINTS = st.sampled_from(
    ([], [{"matchAttribute": f"{DRIVER}/card"}], [{"distinctAttribute": f"{DRIVER}/nope"}])
)


def world_of(devices: list[Dev], semantics: Semantics) -> World:
    raw = []
    for index, dev in enumerate(devices):
        attributes: dict[str, Any] = {"id": index, "size": dev.size}
        if dev.card:
            attributes["card"] = dev.card
        fields: dict[str, Any] = {"kind": dev.kind, "attributes": attributes}
        if dev.uses:
            fields["consumes"] = {"c": {"x": str(dev.uses)}}
        if dev.multi:
            policy = {"requestPolicy": {"validRange": {"min": "1", "max": "3"}}} if dev.policy else {}
            fields["multi"] = True
            fields["capacity"] = {"share": {"value": "4", **policy}}
        if dev.taint:
            fields["taints"] = [{"key": "k", "value": "v", "effect": dev.taint}]
        if dev.bound:
            fields["bindingConditions"] = ["Ready"]
        raw.append(device(f"d{index}", **fields))
    if semantics.version == "1.34":
        slices = [resource_slice("s", raw, counters={"c": {"x": "4"}})]
    else:
        slices = [resource_slice("c", counters={"c": {"x": "4"}}, count=2), resource_slice("s", raw, count=2)]
    classes = [device_class("any", "true")] + [
        device_class(kind, f'device.attributes["{DRIVER}"].kind == "{kind}"') for kind in ("a", "b")
    ]
    world = World(slices, classes, semantics)
    for index, dev in enumerate(devices):
        key = (DRIVER, "p1", f"d{index}")
        if dev.held == "use":
            world.state.in_use.add(key)
        elif dev.held == "share":
            world.state.shares[key] = {"share": Fraction(2)}
    return world


def failing_rules(judged: Judged, early_capacity: bool) -> list[Rule]:
    """Every rule the device fails alone, in the scheduler's order: the spec explain follows."""
    j, semantics = judged, judged.semantics
    keys = counters.counter_keys(j.pool, j.device, semantics)
    checks: list[tuple[Rule, Callable[[], Reason | None]]] = [
        (Rule.BINDING_CONDITIONS, lambda: rules.binding_conditions(j.device)),
        (Rule.IN_USE, lambda: rules.in_use(j.work, j.world.state, 0, j.alternative, j.device, semantics)),
        (Rule.SELECTORS, lambda: rules.selectors(j.world.allocator.matcher, j.alternative, j.device)),
    ]
    capacity = (
        Rule.CAPACITY,
        lambda: rules.capacity_fits(j.work, j.world.state, j.alternative, j.device, semantics),
    )
    if early_capacity:
        checks.append(capacity)
    checks += [
        (Rule.PARTITIONABLE, lambda: rules.partitionable(j.device, semantics)),
        (
            Rule.COUNTERS,
            lambda: (
                counters.counters(j.work, keys, j.device)
                if counters.charges(j.work, j.world.state, j.device, semantics)
                else None
            ),
        ),
        (Rule.TAINTS, lambda: rules.taints(j.device, j.alternative, semantics)),
        (Rule.CONSTRAINTS, lambda: constraints.attributes(j.claim, j.alternative, j.device)),
        capacity,
    ]
    return [rule for rule, check in checks if check() is not None]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(devs(), request_bodies(), SEMANTICS, CONSTRAINTS)
def test_explain_and_the_search_agree_on_every_device(
    devices: list[Dev], body: dict[str, Any], semantics: Semantics, constrained: list[dict[str, str]]
) -> None:
    """A device explain says fits alone is one the search places when the request can take only
    it; a device it gives a reason for the search refuses, and the reason is that of the first
    rule the device fails."""
    if "capacity" in body and not semantics.consumable:
        body = {k: v for k, v in body.items() if k != "capacity"}
    world = world_of(devices, semantics)
    claim = world.claim(claim_object("c", {"name": "r", "exactly": body}, constraints=constrained))
    work = world.allocator.start([claim], Node("n1"), world.state)
    for pool in work.gathered.pools:
        for index, candidate in enumerate(pool.candidates):
            alternative = claim.requests[0].alternatives[0]
            reason = device_reason(world.allocator, work, world.state, 0, claim, alternative, pool, candidate)
            pinned = dict(body)
            pinned["selectors"] = [
                *body.get("selectors", []),
                {"cel": {"expression": f'device.attributes["{DRIVER}"].id == {index}'}},
            ]
            outcome = world.allocate(
                claim_object("c", {"name": "r", "exactly": pinned}, constraints=constrained)
            )
            assert outcome.error is None
            assert (reason is None) == (outcome.allocations is not None), (candidate.name, reason)
            judged = Judged(world, claim, alternative, work, pool, candidate)
            failing = failing_rules(judged, world.allocator.placer.early_capacity)
            if reason is None:
                assert failing == []
            else:
                assert failing[0] is reason.rule
                assert str(reason)
