# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Quantities and consumable capacity (capacity[*].requestPolicy) in ResourceSlices."""

from fractions import Fraction

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import (
    integer_value,
    parse_quantity,
    validate_slice,
)
from tests.support.resource_slices import assert_only, devices_slice_135, slice_134

GI = 2**30


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("1", 1),
        ("-1", -1),
        ("+5", 5),
        ("007", 7),
        ("1.5", Fraction(3, 2)),
        ("1.", 1),
        (".5", Fraction(1, 2)),
        ("100m", Fraction(1, 10)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("1k", 1000),
        ("1M", 10**6),
        ("1G", 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("24Gi", 24 * GI),
        ("1.5Gi", 3 * GI // 2),
        ("1Ei", 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("2.5e2", 250),
        ("0.1n", Fraction(1, 10**9)),  # rounded up to the smallest unit, like the API server
        ("-0.1n", Fraction(-1, 10**9)),
        ("1.0000000001", 1 + Fraction(1, 10**9)),
    ],
)
def test_quantities(text, value):
    assert parse_quantity(text) == value


GARBAGE = ["", "-", ".", "G", "Gi", "1K", "1ki", "1mi", "1 Gi", " 1", "1Gi ", "1e", "1e3.5", "1.2.3", "abc"]
GARBAGE += ["1Gi5", "--1", "1EiB", "0x10", "1_000", "\u0661", "1e1001", "1,5", "inf", "NaN", "1Gi\n"]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_is_not_a_quantity(text):
    with pytest.raises(ValueError, match=r"quantity|exponent"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("quantity", "value"), [(Fraction(3, 2), 2), (Fraction(-3, 2), -2), (2, 2), (Fraction(1, 1000), 1)]
)
def test_integer_values_round_away_from_zero_like_quantity_value(quantity, value):
    assert integer_value(Fraction(quantity)) == value


def _capacity_check(minor, name, change):
    """Apply ``change`` to one capacity entry of the shared card (spec.devices[3])."""
    resource_slice = slice_134() if minor == 34 else devices_slice_135()
    change(resource_slice["spec"]["devices"][3]["capacity"][name])
    return validate_slice(resource_slice, minor)


C = "spec.devices[3].capacity"
SHARE = f"{C}[sharePercent]"
MEMORY = f"{C}[memory]"


def _policy(**policy):
    return lambda capacity: capacity.update(requestPolicy=policy)


def _range(default=None, **bounds):
    policy = {"validRange": bounds} | ({} if default is None else {"default": default})
    return lambda capacity: capacity.update(requestPolicy=policy)


VALUE_CASES = [
    ("memory", lambda c: c.pop("value"), f"{MEMORY}.value", "required"),
    ("memory", lambda c: c.update(value="24 Gi"), f"{MEMORY}.value", "not a Kubernetes quantity"),
    ("memory", lambda c: c.update(value=1.5), f"{MEMORY}.value", "not a quantity string"),
    ("memory", lambda c: c.update(values="1"), f"{MEMORY}.values", "unknown field"),
    (
        "memory",
        lambda c: c["requestPolicy"].update(step="1"),
        f"{MEMORY}.requestPolicy.step",
        "unknown field",
    ),
]
VALID_VALUES_CASES = [
    (
        ["6Gi", "12Gi", "24Gi"],
        "6Gi",
        {"validRange": {"min": "1"}},
        f"{MEMORY}.requestPolicy",
        "mutually exclusive",
    ),
    (
        ["12Gi", "6Gi", "24Gi"],
        "6Gi",
        {},
        f"{MEMORY}.requestPolicy.validValues[1]",
        "sorted in ascending order",
    ),
    (
        [f"{n}Gi" for n in range(1, 12)],
        "1Gi",
        {},
        f"{MEMORY}.requestPolicy.validValues",
        "11 values, more than 10",
    ),
    (["6Gi", "12Gi"], None, {}, f"{MEMORY}.requestPolicy.default", "required when validValues is set"),
    (["6Gi", "12Gi"], "7Gi", {}, f"{MEMORY}.requestPolicy.default", "must be one of validValues"),
    (
        ["6Gi", "12Gi", "48Gi"],
        "6Gi",
        {},
        f"{MEMORY}.requestPolicy.validValues[2]",
        "larger than the capacity value",
    ),
    (["6Gi", "6Gi"], "6Gi", {}, f"{MEMORY}.requestPolicy.validValues[1]", "duplicates validValues[0]"),
    # Compared as integers (Quantity.Value() rounds up): 6Gi - 0.5 and 6Gi differ but collide.
    (["6442450943.5", "6Gi"], "6Gi", {}, f"{MEMORY}.requestPolicy.validValues[1]", "compared as integers"),
    (["6Gi", "lots"], "6Gi", {}, f"{MEMORY}.requestPolicy.validValues[1]", "not a Kubernetes quantity"),
]
RANGE_CASES = [
    (_range(default="100"), f"{SHARE}.requestPolicy.validRange.min", "required when validRange is set"),
    (
        _range(default="101", min="101"),
        f"{SHARE}.requestPolicy.validRange.min",
        "larger than the capacity value",
    ),
    (
        _range(default="0", min="1", max="100", step="1"),
        f"{SHARE}.requestPolicy.default",
        "smaller than validRange.min",
    ),
    (_range(min="1", max="200"), f"{SHARE}.requestPolicy.validRange.max", "larger than the capacity value"),
    (_range(min="50", max="40"), f"{SHARE}.requestPolicy.validRange.min", "larger than validRange.max"),
    (_range(default="60", min="1", max="50"), f"{SHARE}.requestPolicy.default", "larger than validRange.max"),
    (_range(default="1", min="1", step="100"), f"{SHARE}.requestPolicy.validRange.step", "min + step"),
    (
        _range(default="15", min="0", max="100", step="10"),
        f"{SHARE}.requestPolicy.default",
        "multiple of validRange.step",
    ),
    (
        _range(default="10", min="0", max="95", step="10"),
        f"{SHARE}.requestPolicy.validRange.max",
        "multiple of validRange.step",
    ),
    (_range(default="10", min="0", step="0"), f"{SHARE}.requestPolicy.validRange.step", "must be positive"),
    (
        _range(default="10", min="0", step="1", big="2"),
        f"{SHARE}.requestPolicy.validRange.big",
        "unknown field",
    ),
]


@pytest.mark.parametrize(
    ("name", "change", "path", "fragment"), VALUE_CASES, ids=lambda case: str(case)[-30:]
)
@pytest.mark.parametrize("minor", [34, 35])
def test_capacity_values(minor, name, change, path, fragment):
    assert_only(_capacity_check(minor, name, change), path, fragment)


@pytest.mark.parametrize(
    ("values", "default", "extra", "path", "fragment"), VALID_VALUES_CASES, ids=lambda case: str(case)[:30]
)
@pytest.mark.parametrize("minor", [34, 35])
def test_valid_values(minor, values, default, extra, path, fragment):
    policy = {"validValues": values} | extra | ({} if default is None else {"default": default})
    assert_only(_capacity_check(minor, "memory", lambda c: c.update(requestPolicy=policy)), path, fragment)


@pytest.mark.parametrize(("change", "path", "fragment"), RANGE_CASES, ids=lambda case: str(case)[-40:])
@pytest.mark.parametrize("minor", [34, 35])
def test_valid_range(minor, change, path, fragment):
    assert_only(_capacity_check(minor, "sharePercent", change), path, fragment)


@pytest.mark.parametrize(
    "change",
    [
        _range(default="100", min="1", max="100", step="500m"),  # 1.35 rounds the step up to 1
        _range(min="1"),
        _range(default="50", min="10", max="90", step="20"),
        _policy(default="10"),  # only a default: nothing else to check
        _policy(default="10", validValues=[]),  # an empty list counts as unset
        lambda c: c.update(value=100),  # JSON numbers are quantities too
    ],
)
def test_accepted_policies(change):
    assert _capacity_check(35, "sharePercent", change) == []


@pytest.mark.parametrize("minor", [34, 35])
def test_a_request_policy_needs_allow_multiple_allocations(minor):
    resource_slice = slice_134() if minor == 34 else devices_slice_135()
    resource_slice["spec"]["devices"][3]["allowMultipleAllocations"] = False
    problems = validate_slice(resource_slice, minor)
    assert [(problem.path, problem.rule) for problem in problems] == [
        (f"{path}.requestPolicy", "only allowed when the device sets allowMultipleAllocations: true")
        for path in (SHARE, MEMORY)
    ]
