# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a selector reads of ``device``, and the keys that group devices by it (DESIGN.md D12).

The promise the capacity count relies on: two devices with equal keys get the same result (or
the same failure) from every selector whose reads made the key; anything else a selector might
read makes it read "the whole device".
"""

from __future__ import annotations

import itertools
from types import MappingProxyType
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.cel import SelectorEngine, SelectorError, device_view
from deckhouse_gpu.k8s_semantics.cel.device_reads import ReadPlan
from tests.k8s_semantics.cel.sample_device import DRIVER

ENGINE = SelectorEngine()
A = f'device.attributes["{DRIVER}"]'


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        ('device.driver == "x"', {("driver",)}),
        ("device.allowMultipleAllocations", {("allowMultipleAllocations",)}),
        (
            f'{A}.model == "A30" && {A}["index"] > 1',
            {("attributes", DRIVER, "model"), ("attributes", DRIVER, "index")},
        ),
        ('(device.capacity["d.io"]).memory.isGreaterThan(quantity("1"))', {("capacity", "d.io", "memory")}),
        (f"has({A}.model)", {("attributes", DRIVER, "model")}),
        ("has(device.driver)", {("driver",)}),
        ("[1].exists(device, device == 1)", set()),  # a variable named device is not the device
        # Anything that can read more than named values reads the whole device.
        (f'"model" in {A}', None),
        (f"{A}.exists(k, k == 'model')", None),
        (f"size({A}) > 0", None),
        ("device.attributes.size() > 0", None),
        (f'{A}["mo" + "del"] == "A30"', None),
        (f'cel.bind(m, {A}, m.model == "A30")', None),
        ('cel.bind(d, device.attributes, d["x"].model == 1)', None),
    ],
)
def test_what_an_expression_reads(expression: str, reads: set[tuple[str, ...]] | None) -> None:
    found = ENGINE.compile(expression).device_reads
    assert (None if found is None else set(found)) == reads


def _variants() -> list[dict[str, Any]]:
    """Devices that differ in what selectors read, and in what they do not."""
    models: list[dict[str, Any]] = [
        {"model": {"string": "A30"}},
        {"model": {"string": "T4"}},
        {"model": {"int": 1}},
        {"model": {"string": "1"}},
        {"model": {"string": True}},  # a string value that is not one: the view says "True"
        {"model": {"bool": True}},
        {},
        {"model": {"string": "A30"}, f"{DRIVER}/model": {"string": "T4"}},  # the later key wins
        {f"{DRIVER}/model": {"string": "T4"}, "model": {"string": "A30"}},
    ]
    others: list[dict[str, Any]] = [
        {"uuid": {"string": "GPU-1"}},
        {"uuid": {"string": "GPU-2"}},
        {"uuid": {"int": True}},  # invalid: every selector fails on this device
        {"driverVersion": {"version": "1.2.3"}},
        {"driverVersion": {"version": "v1"}},  # invalid
        {"uuid": {}},  # invalid: no value
        {"uuid": {"string": None}},  # invalid: null is no value either
    ]
    capacities = [
        {"memory": {"value": "40Gi"}},
        {"memory": {"value": "40960Mi"}},
        {"memory": {"value": "1"}},
        {},
    ]
    shared = [{}, {"allowMultipleAllocations": True}, {"allowMultipleAllocations": False}]
    return [
        {"name": "d", "attributes": {**m, **o}, "capacity": c, **s}
        for m, o, c, s in itertools.product(models, others, capacities, shared)
    ]


EXPRESSIONS = [
    f'{A}.model == "A30"',
    f'{A}.model == "1"',
    f"{A}.model == 1",
    f'has({A}.model) && {A}.model == "T4"',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    "device.allowMultipleAllocations == true",
    'device.driver == "gpu.example.com"',
]


def _result(expression: str, device: dict[str, Any]) -> object:
    try:
        return ENGINE.compile(expression).matches(device_view(DRIVER, device))
    except SelectorError:
        return "fails"


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_equal_keys_give_equal_results(expression: str) -> None:
    reads = sorted(ENGINE.compile(expression).device_reads or ())
    plan = ReadPlan(reads, DRIVER)
    seen: dict[tuple[Any, ...], object] = {}
    results = set()
    for device in _variants():
        result = _result(expression, device)
        results.add(repr(result))
        assert seen.setdefault(plan.key(device), result) == result, device
    assert len(results) > 1  # the variants tell results apart: the check above is not empty


def test_keys_tell_apart_what_the_view_tells_apart() -> None:
    plan = ReadPlan([("attributes", DRIVER, "model")], DRIVER)
    keys = [plan.key({"attributes": v}) for v in ({"model": {"string": "1"}}, {"model": {"int": 1}})]
    assert keys[0] != keys[1]
    string_true, boolean = ({"model": {"string": True}}, {"model": {"bool": True}})
    assert plan.key({"attributes": string_true}) != plan.key({"attributes": boolean})
    # Another driver's device: unqualified keys are its own domain, not this one.
    other = ReadPlan([("attributes", DRIVER, "model")], "other.example.com")
    assert (
        other.key({"attributes": {"model": {"string": "A30"}}})[1]
        != plan.key({"attributes": {"model": {"string": "A30"}}})[1]
    )


@pytest.mark.parametrize("device", _variants()[::7])
def test_the_key_says_whether_the_view_is_valid(device: dict[str, Any]) -> None:
    valid = ReadPlan([], DRIVER).key(device)[0]
    assert valid == (device_view(DRIVER, device)._error is None)


def test_the_shortcuts_give_the_keys_of_the_full_pass() -> None:
    """Attributes that are all one string or one int are looked up by the read names only, and a
    capacity's text is judged once per plan; a map that is not a dict (and a fresh plan) takes
    the pass over every attribute and judges every capacity: the keys are the same."""
    reads = sorted({read for e in EXPRESSIONS for read in ENGINE.compile(e).device_reads or ()})
    assert ("attributes", DRIVER, "model") in reads  # read as model and as <driver>/model
    plan = ReadPlan(reads, DRIVER)
    shortcuts = 0
    for device in _variants():
        full = {**device, "attributes": MappingProxyType(device["attributes"])}
        assert plan.key(device) == ReadPlan(reads, DRIVER).key(full), device
        shortcuts += all(len(a) == 1 and ("string" in a or "int" in a) for a in device["attributes"].values())
    assert shortcuts > 100  # the shortcut was taken, for aliased names in both orders too
