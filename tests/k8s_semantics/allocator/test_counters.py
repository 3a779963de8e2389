# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The counters rule and the counter accounting of a pass: availability, charge, release."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.k8s_semantics.allocator import counters
from deckhouse_gpu.k8s_semantics.allocator.reasons import Reason, Rule
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.one_device import Judged, judge
from tests.support.allocation import device

V134 = Semantics("1.34")
SET = {"c": {"x": "4"}}


def check(judged: Judged) -> Reason | None:
    keys = counters.counter_keys(judged.pool, judged.device, judged.semantics)
    return counters.counters(judged.work, keys, judged.device)


def uses(name: str, amount: str, counter_set: str = "c", **fields: Any) -> dict[str, Any]:
    return device(name, consumes={counter_set: {"x": amount}}, **fields)


def test_counters_that_fit_pass_and_those_that_do_not_name_the_counter() -> None:
    assert check(judge([uses("a", "4")], counters=SET)) is None
    reason = check(judge([uses("a", "3"), uses("b", "2")], counters=SET, in_use=["a"], name="b"))
    assert reason is not None
    assert reason.rule is Rule.COUNTERS
    assert str(reason) == "counters exhausted (c/x: needs 2, 1 left)"


def test_a_missing_counter_set_or_counter() -> None:
    # 1.34 keeps a slice whose device names a missing set; the rule refuses the device.
    missing_set = judge([uses("a", "1", counter_set="nope")], counters=SET, semantics=V134)
    assert str(check(missing_set)) == "counter set nope not found"
    other = device("a", consumes={"c": {"y": "1"}})
    assert (
        str(check(judge([other], counters=SET, semantics=V134)))
        == "counters exhausted (c/y: needs 1, 0 left)"
    )


def test_what_this_pass_charged_counts_and_release_gives_it_back() -> None:
    judged = judge([uses("a", "3"), uses("b", "2")], counters=SET)
    first, second = judged.pool.candidates
    keys = counters.counter_keys(judged.pool, first, judged.semantics)
    counters.charge(judged.work, keys, first)
    assert str(counters.counters(judged.work, keys, second)) == "counters exhausted (c/x: needs 2, 1 left)"
    counters.release(judged.work, keys, first)
    assert counters.counters(judged.work, keys, second) is None


def test_a_counter_set_named_twice_by_one_device_adds_up() -> None:
    twice = device("a")
    twice["consumesCounters"] = [{"counterSet": "c", "counters": {"x": {"value": "3"}}}] * 2
    assert str(check(judge([twice], counters=SET))) == "counters exhausted (c/x: needs 3, 1 left)"


def test_availability_takes_off_devices_in_use_and_strict_also_shared_ones() -> None:
    devices = [uses("a", "1"), uses("b", "2", multi=True, capacity={"share": "4"})]
    plain = judge(devices, counters=SET, in_use=["a"], shares={"b": {"share": 1}})
    (key,) = counters.counter_keys(plain.pool, plain.device, plain.semantics)
    assert plain.work.available[key] == {"x": 3}
    strict = Semantics(strict=True)
    both = judge(devices, counters=SET, semantics=strict, in_use=["a"], shares={"b": {"share": 1}})
    assert counters.availability(both.work.gathered, both.world.state, strict)[key] == {"x": 1}


def test_134_keeps_counters_per_slice() -> None:
    judged = judge([uses("a", "1")], counters=SET, semantics=V134)
    assert counters.counter_keys(judged.pool, judged.device, V134) == [("gpu.deckhouse.io/p1", "s", "c")]
    assert counters.counter_keys(judged.pool, judged.device, Semantics()) == [
        ("gpu.deckhouse.io/p1", "", "c")
    ]


def test_a_shared_device_charges_its_counters_for_the_first_share_only() -> None:
    card = uses("card", "4", multi=True, capacity={"share": "4"})
    fresh = judge([card], counters=SET)
    assert counters.charges(fresh.work, fresh.world.state, fresh.device, fresh.semantics)
    fresh.work.sharing[fresh.device.key] = {}
    assert not counters.charges(fresh.work, fresh.world.state, fresh.device, fresh.semantics)
    earlier = judge([card], counters=SET, shares={"card": {"share": 1}})
    assert not counters.charges(earlier.work, earlier.world.state, earlier.device, earlier.semantics)
    assert not counters.charges(
        earlier.work, earlier.world.state, judge([device("plain")]).device, Semantics()
    )
    exclusive = judge([card], counters=SET, semantics=Semantics(consumable=False))
    assert counters.charges(exclusive.work, exclusive.world.state, exclusive.device, exclusive.semantics)
