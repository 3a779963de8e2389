# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Selectors judged once per group of alike devices give what each device would give alone."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import FAILS, SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.model import Device, build_inventory
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_cluster import example_classes
from testkit.gpu_objects import node_cards

A = 'device.attributes["gpu.deckhouse.io"]'
EXPRESSIONS = [
    *(s["cel"]["expression"] for c in example_classes() for s in c["spec"]["selectors"]),
    f'{A}.migProfile == "1g.6gb"',  # fails on every whole card: it has no migProfile
    f'{A}.exists(k, k == "migProfile")',  # reads the whole device: judged device by device
    f'{A}.uuid.startsWith("GPU-")',
]


def _devices() -> list[Device]:
    slices = []
    for node, model in (("a", "a30"), ("b", "h100-80gb"), ("c", "t4")):
        slices += render_nodes(node_cards(node, model, 2), 35, {}, True, True)
    broken: dict[str, Any] = {**slices[-1]["spec"]["devices"][0], "name": "broken"}
    broken["attributes"] = {**broken["attributes"], "driverVersion": {"version": "v1"}}  # not semver
    slices[-1]["spec"]["devices"].append(broken)
    return [d for s in build_inventory(slices).slices for d in s.devices]


def _alone(matcher: CelMatcher, expression: str, device: Device) -> object:
    try:
        return matcher.matches(expression, device)
    except SelectorFailure:
        return FAILS


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_a_group_verdict_is_every_devices_own(expression: str) -> None:
    devices = _devices()
    groups = SelectorGroups(CelMatcher(), EXPRESSIONS)
    alone = CelMatcher()  # its own cache: nothing the groups computed leaks into the answer
    fresh = _devices()
    assert groups.per_group([expression]) == ("exists" not in expression)
    for device, twin in zip(devices, fresh, strict=True):
        assert groups.all_of([expression], device) == _alone(alone, expression, twin), device.name


def test_the_classes_see_few_kinds_of_devices() -> None:
    devices = _devices()
    groups = SelectorGroups(CelMatcher(), EXPRESSIONS[:-3])
    assert len({groups.group(d) for d in devices}) < len(devices) / 2  # per model, type and profile


def test_the_first_false_or_failing_selector_decides() -> None:
    devices = _devices()
    groups = SelectorGroups(CelMatcher(), EXPRESSIONS)
    whole = next(d for d in devices if "-mig-" not in d.name and d.name != "broken")
    assert groups.all_of(['device.driver == "x"', f'{A}.migProfile == "1g.6gb"'], whole) is False
    assert groups.all_of([f'{A}.migProfile == "1g.6gb"', 'device.driver == "x"'], whole) is FAILS
    broken = next(d for d in devices if d.name == "broken")
    assert groups.all_of(['device.driver == "gpu.deckhouse.io"'], broken) is FAILS


def test_warm_fills_the_allocators_cache_but_never_with_a_failure() -> None:
    devices = _devices()
    groups = SelectorGroups(CelMatcher(), EXPRESSIONS)
    mig = f'{A}.migProfile == "1g.6gb"'
    groups.warm(['device.driver == "gpu.deckhouse.io"', mig], devices)
    whole = next(d for d in devices if "-mig-" not in d.name and d.name != "broken")
    one = next(d for d in devices if d.name.endswith("-mig-1g-6gb-0"))
    assert whole.cache['device.driver == "gpu.deckhouse.io"'] is True
    assert mig not in whole.cache  # the allocator evaluates it there and fails, as the scheduler
    assert one.cache[mig] is True
    broken = next(d for d in devices if d.name == "broken")
    assert 'device.driver == "gpu.deckhouse.io"' not in broken.cache
