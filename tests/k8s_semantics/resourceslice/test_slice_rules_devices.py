# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Per-device ResourceSlice rules: names, attributes, capacity keys, counters, taints, binding, nodes."""

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_slice
from tests.support.resource_slices import D, assert_only, check_first_device, devices_slice_135, slice_134


def _attributes(count):
    return {f"a{index}": {"int": index} for index in range(count)}


DEVICE_CASES = [
    (lambda d: d.update(name="Gpu-1"), f"{D}.name", '"Gpu-1" is not a DNS-1123 label'),
    (lambda d: d.update(name="gpu_1"), f"{D}.name", "not a DNS-1123 label"),
    (lambda d: d.update(name="g" * 64), f"{D}.name", "not a DNS-1123 label"),
    (lambda d: d.update(name="gpu-0."), f"{D}.name", "not a DNS-1123 label"),
    (lambda d: d.pop("name"), f"{D}.name", "required"),
    (
        lambda d: d.update(name="gpu-0-mig-1g-6gb-0"),
        "spec.devices[1].name",
        "duplicates spec.devices[0].name",
    ),
    (lambda d: d.update(nodeName="node-1"), f"{D}.nodeName", "only allowed when spec.perDeviceNodeSelection"),
    (lambda d: d.update(allNodes=True), f"{D}.allNodes", "only allowed when spec.perDeviceNodeSelection"),
    (lambda d: d.update(bindsToNode="yes"), f"{D}.bindsToNode", "not a boolean"),
    (lambda d: d.update(consumesCounter=[]), f"{D}.consumesCounter", "unknown field"),
    # attributes + capacity together; the card has 5 attributes and 1 capacity
    (
        lambda d: d["attributes"].update(_attributes(27)),
        D,
        "33 attributes and capacities together, more than 32",
    ),
    (
        lambda d: d["capacity"].update({f"c{n}": {"value": "1"} for n in range(27)}),
        D,
        "33 attributes and capacities",
    ),
]
KEY_CASES = [
    ("9model", "not a C identifier"),
    ("mo-del", "not a C identifier"),
    ("m" * 33, "name is longer than 32"),
    ("/model", "the domain must not be empty"),
    ("gpu.deckhouse.io/", "the name must not be empty"),
    ("gpu_deckhouse.io/model", "domain is not a DNS-1123 subdomain"),
    ("d" * 61 + ".io/model", "domain is longer than 63"),
    ("a/b/c", "more than one '/'"),
]
VALUE_CASES = [
    ({}, "", "exactly one of int, bool, string, version (has 0)"),
    ({"int": 1, "string": "x"}, "", "(has 2)"),
    ({"int": "1"}, ".int", "not a 64-bit integer"),
    ({"int": 1.0}, ".int", "not a 64-bit integer"),
    ({"int": 2**63}, ".int", "not a 64-bit integer"),
    ({"bool": "true"}, ".bool", "not a boolean"),
    ({"string": 5}, ".string", "not a string"),
    ({"string": "x" * 65}, ".string", "65 bytes, more than 64"),
    ({"string": "ü" * 33}, ".string", "66 bytes, more than 64"),
    ({"version": "v1.0.0"}, ".version", "not a semver 2.0.0 version"),
    ({"version": "1.02.0"}, ".version", "not a semver"),
    ({"version": "1.0"}, ".version", "not a semver"),
    ({"version": "1.0.0-01"}, ".version", "not a semver"),
    ({"version": "1.0.0+"}, ".version", "not a semver"),
    ({"version": "1.0.0\n"}, ".version", "not a semver"),
    ({"version": "1.0.0-" + "a" * 60}, ".version", "66 bytes, more than 64"),
    ({"int": 1, "flag": True}, ".flag", "unknown field"),
]


@pytest.mark.parametrize(("mutate", "path", "fragment"), DEVICE_CASES, ids=lambda case: str(case)[-40:])
@pytest.mark.parametrize("minor", [34, 35])
def test_device_rules(minor, mutate, path, fragment):
    assert_only(check_first_device(minor, mutate), path, fragment)


@pytest.mark.parametrize(("key", "fragment"), KEY_CASES)
@pytest.mark.parametrize("kind", ["attributes", "capacity"])
@pytest.mark.parametrize("minor", [34, 35])
def test_attribute_and_capacity_keys(minor, kind, key, fragment):
    value = {"string": "x"} if kind == "attributes" else {"value": "1"}
    assert_only(
        check_first_device(minor, lambda d: d[kind].update({key: value})), f"{D}.{kind}[{key}]", fragment
    )


@pytest.mark.parametrize(
    "key", ["GPU.Deckhouse.io/model", "_x", "x_9", "m" * 32, "d" * 60 + ".io/" + "n" * 32]
)
def test_accepted_keys(key):
    assert check_first_device(34, lambda d: d["attributes"].update({key: {"bool": True}})) == []


@pytest.mark.parametrize(("value", "suffix", "fragment"), VALUE_CASES, ids=lambda case: str(case)[:30])
@pytest.mark.parametrize("minor", [34, 35])
def test_attribute_values(minor, value, suffix, fragment):
    problems = check_first_device(minor, lambda d: d["attributes"].update(extra=value))
    assert_only(problems, f"{D}.attributes[extra]{suffix}", fragment)


@pytest.mark.parametrize(
    "value",
    [
        {"version": "1.0.0-rc.1+build.5"},
        {"version": "0.0.0"},
        {"int": -(2**63)},
        {"string": "x" * 64},
        {"string": ""},
    ],
)
def test_accepted_attribute_values(value):
    assert check_first_device(34, lambda d: d["attributes"].update(extra=value)) == []


def _counters(count):
    return {f"c-{index}": {"value": "1"} for index in range(count)}


CONSUMPTION = f"{D}.consumesCounters"
# 1.35 only: validate_slice cannot see the pool's sets, so references are not checked there.
CONSUMPTION_CASES_135 = [
    (lambda c: c.append(dict(c[0])), f"{CONSUMPTION}[1].counterSet", "duplicates consumesCounters[0]"),
    (lambda c: c[0].update(counterSet="Card"), f"{CONSUMPTION}[0].counterSet", "not a DNS-1123 label"),
    (lambda c: c[0].pop("counterSet"), f"{CONSUMPTION}[0].counterSet", "required"),
    (lambda c: c[0].update(counters={}), f"{CONSUMPTION}[0].counters", "at least one counter"),
    (
        lambda c: c[0]["counters"].update(Mem={"value": "1"}),
        f"{CONSUMPTION}[0].counters[Mem]",
        "DNS-1123 label",
    ),
    (
        lambda c: c[0]["counters"].update(memory={"value": "lots"}),
        f"{CONSUMPTION}[0].counters[memory].value",
        "quantity",
    ),
    (
        lambda c: c.extend({"counterSet": f"set-{n}", "counters": _counters(1)} for n in range(2)),
        CONSUMPTION,
        "3 entries, more than 2 (1.35)",
    ),
    (
        lambda c: c[0].update(counters=_counters(33)),
        f"{CONSUMPTION}[0].counters",
        "33 counters, more than 32 (1.35)",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"), CONSUMPTION_CASES_135, ids=lambda case: str(case)[-40:]
)
def test_counter_consumption_on_1_35(mutate, path, fragment):
    assert_only(check_first_device(35, lambda d: mutate(d["consumesCounters"])), path, fragment)


def test_1_34_counts_a_devices_consumed_counters_over_all_entries():
    # Unreachable alone: with unique sets per entry a device cannot consume more counters than
    # the slice declares, and 1.34 caps those at 32 as well. So both limits trip together.
    resource_slice = slice_134()
    spec = resource_slice["spec"]
    spec["sharedCounters"] = [
        {"name": "a", "counters": _counters(16)},
        {"name": "b", "counters": _counters(17)},
    ]
    spec["devices"] = [
        {"name": "gpu-0", "consumesCounters": [{"counterSet": "a", "counters": _counters(16)}]}
    ]
    spec["devices"][0]["consumesCounters"].append({"counterSet": "b", "counters": _counters(17)})
    assert [(problem.path, problem.rule) for problem in validate_slice(resource_slice, 34)] == [
        ("spec.sharedCounters", "has 33 counters in all sets, more than 32 (1.34)"),
        (CONSUMPTION, "consumes 33 counters in all entries, more than 32 (1.34)"),
    ]
    spec["sharedCounters"][1]["counters"] = _counters(16)
    spec["devices"][0]["consumesCounters"][1]["counters"] = _counters(16)
    assert validate_slice(resource_slice, 34) == []


BINDING_CASES = [
    (
        {"bindingConditions": ["a"] * 1},
        f"{D}.bindingFailureConditions",
        "set both binding condition lists or neither",
    ),
    (
        {"bindingFailureConditions": ["a"]},
        f"{D}.bindingConditions",
        "set both binding condition lists or neither",
    ),
    (
        {"bindingConditions": [f"c{n}" for n in range(5)], "bindingFailureConditions": ["f"]},
        f"{D}.bindingConditions",
        "5 entries, more than 4",
    ),
    (
        {"bindingConditions": ["c"], "bindingFailureConditions": [f"f{n}" for n in range(5)]},
        f"{D}.bindingFailureConditions",
        "5 entries, more than 4",
    ),
    (
        {"bindingConditions": ["c", "c"], "bindingFailureConditions": ["f"]},
        f"{D}.bindingConditions[1]",
        "listed twice",
    ),
    (
        {"bindingConditions": ["c"], "bindingFailureConditions": ["f", "c"]},
        f"{D}.bindingFailureConditions[1]",
        "in bindingConditions too",
    ),
    (
        {"bindingConditions": ["bad/key/x"], "bindingFailureConditions": ["f"]},
        f"{D}.bindingConditions[0]",
        "not a valid label key",
    ),
]


@pytest.mark.parametrize(("fields", "path", "fragment"), BINDING_CASES, ids=lambda case: str(case)[:40])
@pytest.mark.parametrize("minor", [34, 35])
def test_binding_conditions(minor, fields, path, fragment):
    assert_only(check_first_device(minor, lambda d: d.update(fields)), path, fragment)


def test_binding_conditions_in_both_lists_are_valid():
    fields = {
        "bindingConditions": ["example.com/ready"] * 1,
        "bindingFailureConditions": ["example.com/failed"],
    }
    assert check_first_device(35, lambda d: d.update(fields, bindsToNode=True)) == []


SELECTOR = {
    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]
}


def _per_device(device_fields):
    resource_slice = devices_slice_135()
    spec = resource_slice["spec"]
    del spec["nodeName"]
    spec["perDeviceNodeSelection"] = True
    for device in spec["devices"]:
        device["nodeName"] = "node-1"
    spec["devices"][0].pop("nodeName")
    spec["devices"][0].update(device_fields)
    return validate_slice(resource_slice, 35)


@pytest.mark.parametrize(
    ("fields", "path", "fragment"),
    [
        (
            {},
            D,
            "exactly one of nodeName, nodeSelector, allNodes when spec.perDeviceNodeSelection is true",
        ),
        ({"nodeName": "node-1", "allNodes": True}, D, "(has 2)"),
        ({"nodeName": ""}, f"{D}.nodeName", "not a DNS-1123 subdomain"),
        ({"allNodes": False}, f"{D}.allNodes", "may only be set to true"),
        ({"nodeSelector": {"nodeSelectorTerms": []}}, f"{D}.nodeSelector.nodeSelectorTerms", "at least one"),
        (
            {"nodeSelector": {"nodeSelectorTerms": SELECTOR["nodeSelectorTerms"] * 2}},
            f"{D}.nodeSelector.nodeSelectorTerms",
            "the allocator fails",
        ),
    ],
)
def test_per_device_node_selection(fields, path, fragment):
    assert_only(_per_device(fields), path, fragment)


@pytest.mark.parametrize("fields", [{"nodeName": "node-2"}, {"allNodes": True}, {"nodeSelector": SELECTOR}])
def test_valid_per_device_node_selection(fields):
    assert _per_device(fields) == []
