# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DRA CEL engine (k8s_semantics/cel): the ``device`` variable, attribute and capacity access, devices
upstream cannot convert, and views that evaluation leaves alone."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.cel import SelectorEngine, SelectorError, device_view
from tests.k8s_semantics.cel.sample_device import DEVICE, DRIVER, A, C, evaluate

# --- the device variable (KUBERNETES-FACTS.md F3.1) ----------------------------------------------------

DEVICE_CASES = [
    # keys split at the first "/", unqualified keys under the driver's domain
    (f'device.driver == "{DRIVER}"', True),
    (f'{A}.model == "A30"', True),
    (f"{A}.uuid == 'GPU-1'", True),  # "gpu.example.com/uuid" is the same domain
    ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:3b"', True),
    (f"{A}.index == 3 && {A}.healthy", True),
    (f'{C}.memory == quantity("40Gi")', True),
    ('device.capacity["example.com"].bandwidth == quantity("1.5")', True),
    # an unknown domain is an empty map; has() on a domain map always finds (upstream's Find)
    ('device.attributes["example.org"].size() == 0', True),
    ('has(device.attributes["example.org"].model)', False),
    ("has(device.attributes.anything)", True),
    ('"example.org" in device.attributes', False),
    (f'"{DRIVER}" in device.attributes', True),
    ("device.attributes.size() == 2 && device.capacity.size() == 2", True),
    (f"has({A}.model) && !has({A}.missing)", True),
    (f'"model" in {A}', True),
    (f"{A}.all(k, k != 'pcieRoot')", True),
    # version attributes are Semver objects
    (f'{A}.driverVersion == semver("580.82.7")', True),
    (f'{A}.driverVersion.isGreaterThan(semver("580.0.0")) && {A}.driverVersion.major() == 580', True),
    # allowMultipleAllocations
    ("device.allowMultipleAllocations", True),
    ("has(device.allowMultipleAllocations)", True),
    # comparisons of a dyn attribute with another type are false at runtime, as in cel-go
    (f"{A}.model == 1", False),
    (f"{A}.healthy == 1", False),
    (f"{A}.index == 3.0 && {A}.index == 3u", True),
    (f'{A}.index == quantity("3")', False),  # an int on the left: unequal
]


@pytest.mark.parametrize(("expression", "expected"), DEVICE_CASES)
def test_device_variable(expression: str, expected: bool) -> None:
    assert evaluate(expression) is expected


def test_allow_multiple_allocations_absent_reads_false() -> None:
    view = device_view(DRIVER, {"name": "d", "attributes": {}})
    assert evaluate("device.allowMultipleAllocations", view) is False
    assert evaluate(f'device.driver == "{DRIVER}" && device.attributes.size() == 0', view) is True


def test_allow_multiple_allocations_is_declared_only_with_consumable_capacity() -> None:
    engine = SelectorEngine(consumable_capacity=False)
    view = device_view(DRIVER, DEVICE, consumable_capacity=False)
    assert evaluate(f'{A}.model == "A30"', view, engine) is True
    for expression in ("device.allowMultipleAllocations", "has(device.allowMultipleAllocations)"):
        with pytest.raises(SelectorError, match="undefined field 'allowMultipleAllocations' of device"):
            engine.compile(expression)
    # an engine that declares it, on a view built without it: an evaluation error, not a crash
    with pytest.raises(SelectorError, match="no such field: allowMultipleAllocations"):
        evaluate("device.allowMultipleAllocations", view)


@pytest.mark.parametrize(
    ("attributes", "capacity", "reason"),
    [
        ({"v": {"version": "1.0"}}, {}, "attribute v: parse semantic version"),
        ({"v": {"version": "01.0.0"}}, {}, "attribute v: parse semantic version"),
        ({"v": {}}, {}, "attribute v: unsupported attribute value"),
        ({"v": {"int": "3"}}, {}, "attribute v: int value '3' is not an integer"),
        ({}, {"memory": {"value": "lots"}}, "capacity memory: 'lots' is not a Kubernetes quantity"),
    ],
)
def test_a_device_upstream_cannot_convert_fails_every_selector(
    attributes: dict[str, Any], capacity: dict[str, Any], reason: str
) -> None:
    view = device_view(DRIVER, {"name": "bad", "attributes": attributes, "capacity": capacity})
    for expression in ("true", f'device.driver == "{DRIVER}"'):
        with pytest.raises(SelectorError, match=f"device 'bad': {reason}"):
            evaluate(expression, view)


def test_attribute_kinds_are_taken_in_upstream_order() -> None:
    view = device_view(DRIVER, {"name": "d", "attributes": {"x": {"int": 1, "string": "s"}}})
    assert evaluate(f"{A}.x == 1", view) is True


def test_views_are_not_changed_by_evaluation() -> None:
    view = device_view(DRIVER, DEVICE)
    shadowing = ("[1].all(device, device == 1)", "cel.bind(device, 1, device == 1)", "[1].all(x, x == 1)")
    for expression in shadowing:
        assert evaluate(expression, view) is True
    assert evaluate(f'device.driver == "{DRIVER}"', view) is True
    assert repr(view) == "DeviceView('gpu-0')"
