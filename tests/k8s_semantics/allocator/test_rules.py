# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-device rules one by one: each passes with None and fails with its reason's words."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.allocator import rules
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.allocator.reasons import Rule
from deckhouse_gpu.k8s_semantics.allocator.search_pass import Placed
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.one_device import judge
from tests.support.allocation import DRIVER, IS_GPU, device, device_class, exactly

V134 = Semantics("1.34")


def failed(reason: object, rule: Rule, words: str) -> None:
    assert reason is not None
    assert getattr(reason, "rule", None) is rule
    assert str(reason) == words


def test_binding_conditions() -> None:
    failed(
        rules.binding_conditions(judge([device("a", bindingConditions=["Ready"])]).device),
        Rule.BINDING_CONDITIONS,
        "needs binding conditions",
    )
    assert rules.binding_conditions(judge([device("a")]).device) is None


def in_use_of(judged: Any) -> object:
    return rules.in_use(
        judged.work, judged.world.state, 0, judged.alternative, judged.device, judged.semantics
    )


def test_in_use_by_an_earlier_claim() -> None:
    failed(in_use_of(judge([device("a")], in_use=["a"])), Rule.IN_USE, "in use")
    assert in_use_of(judge([device("a")])) is None


def test_in_use_by_an_earlier_request_of_the_same_allocation() -> None:
    judged = judge([device("a")])
    judged.work.allocating.add(judged.device.key)
    failed(in_use_of(judged), Rule.IN_USE, "already taken in this allocation")


def test_a_shared_device_is_never_in_use_its_capacity_decides() -> None:
    judged = judge([device("a", multi=True, capacity={"share": "4"})], in_use=["a"])
    failed(in_use_of(judged), Rule.IN_USE, "in use")  # an exclusive result still holds it
    judged = judge([device("a", multi=True, capacity={"share": "4"})])
    judged.work.allocating.add(judged.device.key)
    assert in_use_of(judged) is None
    off = judge([device("a", multi=True)], semantics=Semantics(consumable=False))
    off.work.allocating.add(off.device.key)
    failed(in_use_of(off), Rule.IN_USE, "already taken in this allocation")


def test_admin_access_takes_a_device_in_use_but_once_per_claim() -> None:
    judged = judge([device("a")], exactly("r", adminAccess=True), in_use=["a"])
    assert in_use_of(judged) is None
    judged.work.placed[0].append(Placed(judged.alternative, judged.device))
    failed(in_use_of(judged), Rule.IN_USE, "already allocated to this claim")


def test_selectors_name_the_class_or_the_request_selector() -> None:
    long = f'device.attributes["{DRIVER}"].memory >= 40 && device.attributes["{DRIVER}"].kind == "gpu"'
    request = exactly("r", selectors=[{"cel": {"expression": long}}])
    nic = judge([device("n", kind="nic")], request)
    failed(
        rules.selectors(nic.world.allocator.matcher, nic.alternative, nic.device),
        Rule.SELECTORS,
        "not of DeviceClass gpu",
    )
    gpu = judge([device("g", attributes={"memory": 10})], request)
    failed(
        rules.selectors(gpu.world.allocator.matcher, gpu.alternative, gpu.device),
        Rule.SELECTORS,
        'request selector false: device.attributes["gpu.deckhouse.io"].memory >= 40 && dev...',
    )
    big = judge([device("g", attributes={"memory": 80})], request)
    assert rules.selectors(big.world.allocator.matcher, big.alternative, big.device) is None


def test_a_selector_that_cannot_be_evaluated_raises() -> None:
    judged = judge([device("a")], exactly("r", "bad"), classes=[device_class("bad", "device.nope == 1")])
    with pytest.raises(SelectorFailure):
        rules.selectors(judged.world.allocator.matcher, judged.alternative, judged.device)


def test_partitionable_devices_off_refuses_devices_with_counters() -> None:
    consuming = device("a", consumes={"c": {"x": "1"}})
    off = Semantics("1.34", partitionable=False)
    failed(
        rules.partitionable(judge([consuming], semantics=off).device, off),
        Rule.PARTITIONABLE,
        "consumes counters, but partitionable devices are off",
    )
    assert rules.partitionable(judge([consuming], semantics=V134).device, V134) is None
    assert rules.partitionable(judge([device("b")], semantics=off).device, off) is None


@pytest.mark.parametrize(
    ("effect", "semantics", "tolerations", "words"),
    [
        ("NoSchedule", Semantics(), [], "taint k=v:NoSchedule not tolerated"),
        ("NoExecute", Semantics(), [], "taint k=v:NoExecute not tolerated"),
        ("PreferNoSchedule", Semantics(), [], None),  # 1.35 enforces NoSchedule and NoExecute only
        ("PreferNoSchedule", V134, [], "taint k=v:PreferNoSchedule not tolerated"),
        ("NoSchedule", Semantics(taints=False), [], None),
        ("NoSchedule", Semantics(), [{"key": "k", "operator": "Exists"}], None),
        ("NoSchedule", Semantics(), [{"key": "k", "value": "w"}], "taint k=v:NoSchedule not tolerated"),
    ],
)
def test_taints(
    effect: str, semantics: Semantics, tolerations: list[dict[str, str]], words: str | None
) -> None:
    tainted = device("a", taints=[{"key": "k", "value": "v", "effect": effect}])
    judged = judge([tainted], exactly("r", tolerations=tolerations), semantics=semantics)
    reason = rules.taints(judged.device, judged.alternative, semantics)
    if words is None:
        assert reason is None
    else:
        failed(reason, Rule.TAINTS, words)


def shared(**policy: object) -> dict[str, Any]:
    return device("card", multi=True, capacity={"share": {"value": "4", "requestPolicy": policy}})


def wants(amount: str) -> dict[str, Any]:
    return exactly("r", capacity={"requests": {"share": amount}})


def capacity_of(judged: Any) -> object:
    return rules.capacity_fits(
        judged.work, judged.world.state, judged.alternative, judged.device, judged.semantics
    )


def test_capacity_the_device_lacks() -> None:
    failed(capacity_of(judge([device("plain")], wants("1"))), Rule.CAPACITY, "no capacity share")


def test_capacity_the_request_policy_cannot_serve() -> None:
    judged = judge([shared(validRange={"min": "1", "max": "2"})], wants("3"))
    failed(capacity_of(judged), Rule.CAPACITY, "capacity share: 3 breaks the request policy")
    assert capacity_of(judge([shared(validRange={"min": "1", "max": "2"})], wants("2"))) is None


def test_capacity_counts_earlier_shares_and_this_allocations_shares() -> None:
    earlier = judge([shared()], wants("2"), shares={"card": {"share": 3}})
    failed(capacity_of(earlier), Rule.CAPACITY, "capacity share: needs 2, 1 left")
    now = judge([shared()], wants("2"))
    assert capacity_of(now) is None
    now.work.sharing[now.device.key] = {"share": Fraction(3)}
    failed(capacity_of(now), Rule.CAPACITY, "capacity share: needs 2, 1 left")
    over = judge([shared()], wants("1"), shares={"card": {"share": 5}})
    failed(capacity_of(over), Rule.CAPACITY, "capacity share: needs 1, 0 left")


def test_capacity_is_not_a_rule_without_consumable_capacity() -> None:
    judged = judge([device("plain", capacity={"share": "1"})], semantics=Semantics(consumable=False))
    assert capacity_of(judged) is None


def test_consumed_applies_the_policy_to_every_capacity_of_the_device() -> None:
    card = device(
        "card",
        multi=True,
        capacity={"share": {"value": "4", "requestPolicy": {"default": "1"}}, "memory": "8Gi"},
    )
    judged = judge([card], wants("2"))
    assert rules.consumed(judged.alternative, judged.device) == {
        "share": Quantity.parse("2"),
        "memory": Quantity.parse("8Gi"),
    }
    assert rules.consumed(judge([card]).alternative, judged.device)["share"] == Quantity.parse("1")


def test_every_class_selector_goes_first() -> None:
    # Both selectors are false: the class's is named, as the scheduler evaluates it first.
    request = exactly("r", selectors=[{"cel": {"expression": "false"}}])
    nic = judge([device("n", kind="nic")], request, classes=[device_class("gpu", IS_GPU)])
    failed(
        rules.selectors(nic.world.allocator.matcher, nic.alternative, nic.device),
        Rule.SELECTORS,
        "not of DeviceClass gpu",
    )
