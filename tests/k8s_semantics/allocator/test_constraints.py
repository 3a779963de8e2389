# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Constraints: the rule a device fails alone, and what the pass keeps between the devices."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.allocator import constraints
from deckhouse_gpu.k8s_semantics.allocator.reasons import Rule
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.one_device import Judged, judge
from tests.support.allocation import DRIVER, device, exactly

CARD = f"{DRIVER}/card"


def cards(*values: str | None) -> list[dict[str, Any]]:
    return [device(f"d{i}", attributes={"card": v} if v else {}) for i, v in enumerate(values)]


def test_a_device_without_the_compared_attribute_fails_alone() -> None:
    for kind in ("matchAttribute", "distinctAttribute"):
        judged = judge(cards(None), constraints=[{kind: CARD}])
        reason = constraints.attributes(judged.claim, judged.alternative, judged.device)
        assert reason is not None
        assert reason.rule is Rule.CONSTRAINTS
        assert str(reason) == f"no attribute {CARD} for {kind}"
        with_it = judge(cards("x"), constraints=[{kind: CARD}])
        assert constraints.attributes(with_it.claim, with_it.alternative, with_it.device) is None


def test_the_driver_s_own_attributes_need_no_domain() -> None:
    judged = judge(cards("x"), constraints=[{"matchAttribute": CARD}])
    assert constraints.attributes(judged.claim, judged.alternative, judged.device) is None


def test_a_constraint_for_other_requests_does_not_apply() -> None:
    judged = judge(cards(None), exactly("r"), constraints=[{"requests": ["other"], "matchAttribute": CARD}])
    assert constraints.attributes(judged.claim, judged.alternative, judged.device) is None


def add(judged: Judged, index: int) -> bool:
    device = judged.pool.candidates[index]
    return constraints.constrain(judged.work, 0, judged.claim, judged.alternative, device, judged.semantics)


def test_match_attribute_keeps_the_first_value_until_every_device_left() -> None:
    judged = judge(cards("x", "x", "y"), constraints=[{"matchAttribute": CARD}])
    assert add(judged, 0)
    assert add(judged, 1)
    assert not add(judged, 2)
    constraints.unconstrain(judged.work, 0, judged.claim, judged.alternative)
    assert not add(judged, 2)  # one "x" is still placed
    constraints.unconstrain(judged.work, 0, judged.claim, judged.alternative)
    assert add(judged, 2)


@pytest.mark.parametrize(("version", "repeats"), [("1.35", False), ("1.34", True)])
def test_distinct_attribute_refuses_a_repeated_value_on_135(version: str, repeats: bool) -> None:
    judged = judge(
        cards("x", "x"),
        exactly("a"),
        exactly("b"),
        semantics=Semantics(version),
        constraints=[{"distinctAttribute": CARD}],
    )
    assert add(judged, 0)
    second = judged.claim.requests[1].alternatives[0]
    ok = constraints.constrain(
        judged.work, 0, judged.claim, second, judged.pool.candidates[1], judged.semantics
    )
    assert ok is repeats


def test_a_refused_device_leaves_the_earlier_constraints_as_they_were() -> None:
    both = [{"matchAttribute": CARD}, {"distinctAttribute": f"{DRIVER}/slot"}]
    devices = [
        device("d0", attributes={"card": "x", "slot": "1"}),
        device("d1", attributes={"card": "x", "slot": "1"}),
    ]
    judged = judge(devices, exactly("a"), exactly("b"), constraints=both)
    assert add(judged, 0)
    before = (dict(judged.work.matched), dict(judged.work.matched_count), dict(judged.work.distinct))
    second = judged.claim.requests[1].alternatives[0]
    # d1 matches the card but repeats the slot: the match it added is taken back.
    assert not constraints.constrain(
        judged.work, 0, judged.claim, second, judged.pool.candidates[1], judged.semantics
    )
    assert (judged.work.matched, judged.work.matched_count, judged.work.distinct) == before
