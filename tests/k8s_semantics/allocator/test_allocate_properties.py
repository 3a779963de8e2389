# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Property tests: random pools, classes and claims against a brute-force enumeration.

The brute force tries every assignment of devices to the requested slots and checks the rules
directly: selectors, exclusivity, capacity of shared devices, counters. Strict mode (the audit's)
must find a solution exactly when one exists; the scheduler-faithful default may miss some (its
quirks are conservative within one pass) but never returns an allocation the rules forbid.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.support.allocation import World, claim_object, device, device_class, exactly, resource_slice

KINDS = ("a", "b")
SET_SIZE = 4
SHARE_SIZE = 4


@dataclass(frozen=True)
class Dev:
    name: str
    kind: str
    uses: int  # of counter set "c" (0: consumes nothing)
    multi: bool


@dataclass(frozen=True)
class Slot:
    claim: int
    request: str
    kind: str | None  # class: None matches any kind
    share: int | None  # capacity request of "share"


def devices_strategy() -> st.SearchStrategy[list[Dev]]:
    one = st.tuples(st.sampled_from(KINDS), st.integers(0, 3), st.booleans())
    return st.lists(one, min_size=1, max_size=5).map(
        lambda items: [Dev(f"d{i}", kind, uses, multi) for i, (kind, uses, multi) in enumerate(items)]
    )


def claims_strategy() -> st.SearchStrategy[list[list[tuple[str | None, int, int | None]]]]:
    request = st.tuples(
        st.sampled_from((None, *KINDS)), st.integers(1, 2), st.one_of(st.none(), st.integers(1, 3))
    )
    return st.lists(st.lists(request, min_size=1, max_size=2), min_size=1, max_size=2)


def build(
    devs: Sequence[Dev], claims: Sequence[Sequence[tuple[str | None, int, int | None]]], semantics: Semantics
):
    raw = []
    for dev in devs:
        fields: dict[str, Any] = {"kind": dev.kind}
        if dev.uses:
            fields["consumes"] = {"c": {"x": str(dev.uses)}}
        if dev.multi:
            fields["multi"] = True
            fields["capacity"] = {"share": str(SHARE_SIZE)}
        raw.append(device(dev.name, **fields))
    slices = [
        resource_slice("counters", counters={"c": {"x": str(SET_SIZE)}}, count=2),
        resource_slice("devices", raw, count=2),
    ]
    classes = [device_class("any", "true")] + [
        device_class(kind, f'device.attributes["gpu.deckhouse.io"].kind == "{kind}"') for kind in KINDS
    ]
    objects = []
    slots: list[Slot] = []
    for index, requests in enumerate(claims):
        body = []
        for number, (kind, count, share) in enumerate(requests):
            name = f"r{number}"
            fields = {"capacity": {"requests": {"share": str(share)}}} if share else {}
            body.append(exactly(name, kind or "any", count=count, **fields))
            slots += [Slot(index, name, kind, share)] * count
        objects.append(claim_object(f"c{index}", *body))
    return World(slices, classes, semantics), objects, slots


def valid(devs: Sequence[Dev], slots: Sequence[Slot], chosen: Sequence[Dev]) -> bool:
    used: dict[str, int] = {}
    share_total: dict[str, int] = {}
    for slot, dev in zip(slots, chosen, strict=True):
        if slot.kind is not None and dev.kind != slot.kind:
            return False
        if slot.share is not None and not dev.multi:
            return False  # the device lacks the capacity the request names
        used[dev.name] = used.get(dev.name, 0) + 1
        if dev.multi:
            share_total[dev.name] = share_total.get(dev.name, 0) + (slot.share or SHARE_SIZE)
    for dev in devs:
        if not dev.multi and used.get(dev.name, 0) > 1:
            return False
        if share_total.get(dev.name, 0) > SHARE_SIZE:
            return False
    counters = sum(dev.uses for dev in devs if dev.name in used)
    return counters <= SET_SIZE


def brute_force(devs: Sequence[Dev], slots: Sequence[Slot]) -> bool:
    return any(valid(devs, slots, chosen) for chosen in itertools.product(devs, repeat=len(slots)))


def chosen_devices(outcome_allocations: list[dict[str, Any]], devs: Sequence[Dev]) -> list[Dev]:
    by_name = {dev.name: dev for dev in devs}
    return [by_name[r["device"]] for a in outcome_allocations for r in a["devices"]["results"]]


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(devices_strategy(), claims_strategy())
def test_strict_mode_finds_a_solution_exactly_when_one_exists(
    devs: list[Dev], claims: list[list[tuple[str | None, int, int | None]]]
) -> None:
    world, objects, slots = build(devs, claims, Semantics(strict=True))
    outcome = world.allocate(*objects)
    assert outcome.error is None
    assert (outcome.allocations is not None) == brute_force(devs, slots)
    if outcome.allocations is not None:
        assert valid(devs, slots, chosen_devices(outcome.allocations, devs))


@SETTINGS
@given(devices_strategy(), claims_strategy())
def test_the_scheduler_faithful_mode_never_breaks_the_rules(
    devs: list[Dev], claims: list[list[tuple[str | None, int, int | None]]]
) -> None:
    world, objects, slots = build(devs, claims, Semantics())
    outcome = world.allocate(*objects)
    assert outcome.error is None
    if outcome.allocations is not None:
        assert valid(devs, slots, chosen_devices(outcome.allocations, devs))
        results = [r for a in outcome.allocations for r in a["devices"]["results"]]
        share_ids = [r["shareID"] for r in results if "shareID" in r]
        assert len(share_ids) == len(set(share_ids))


@SETTINGS
@given(devices_strategy(), claims_strategy(), st.sampled_from(["1.34", "1.35"]))
def test_allocating_claim_by_claim_never_overcommits_in_strict_mode(
    devs: list[Dev], claims: list[list[tuple[str | None, int, int | None]]], version: str
) -> None:
    # Later claims see the earlier ones only through the allocated state, as in later
    # scheduling cycles; strict mode keeps every rule across cycles.
    world, objects, slots = build(devs, claims, Semantics(version, strict=True))
    placed: list[Slot] = []
    chosen: list[Dev] = []
    for index, claim in enumerate(objects):
        outcome = world.allocate(claim)
        assert outcome.error is None
        if outcome.allocations is None:
            continue
        world.commit(outcome)
        placed += [s for s in slots if s.claim == index]
        chosen += chosen_devices(outcome.allocations, devs)
    assert valid(devs, placed, chosen)
