# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Slice-wide ResourceSlice rules: known-good layouts, metadata, driver, pool, node selection, limits."""

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import Problem, validate_pool, validate_slice
from tests.support.resource_slices import (
    assert_only,
    counters_slice_135,
    devices_slice_135,
    pool_135,
    slice_134,
)


def test_the_1_34_layout_is_valid_on_1_34():
    assert validate_slice(slice_134(), 34) == []


@pytest.mark.parametrize("minor", [35, 36, 40])
def test_the_1_35_pool_is_valid_on_1_35_and_later(minor):
    assert validate_pool(pool_135(), minor) == []
    assert [validate_slice(each, minor) for each in pool_135()] == [[], []]


@pytest.mark.parametrize("minor", [35, 36])
def test_the_1_34_layout_is_invalid_on_1_35(minor):
    assert_only(validate_slice(slice_134(), minor), "spec", "only one of sharedCounters or devices")


def test_an_empty_devices_list_still_counts_as_set_on_1_35_but_null_does_not():
    empty = counters_slice_135()
    empty["spec"]["devices"] = []
    assert_only(validate_slice(empty, 35), "spec", "only one of sharedCounters or devices")
    null = counters_slice_135()
    null["spec"]["devices"] = None  # what a v0.34 Go client sends
    assert validate_slice(null, 35) == []


def test_the_1_35_devices_slice_is_invalid_on_1_34():
    # 1.34 resolves counter sets inside the slice only.
    problems = validate_slice(devices_slice_135(), 34)
    assert problems
    assert {problem.path for problem in problems} == {
        f"spec.devices[{index}].consumesCounters[0].counterSet" for index in range(3)
    }
    assert all("in this slice's sharedCounters" in problem.rule for problem in problems)
    assert validate_slice(counters_slice_135(), 34) == []


def test_minor_versions_before_1_34_are_refused():
    with pytest.raises(ValueError, match=r"1\.33"):
        validate_slice(slice_134(), 33)


def test_problems_read_as_path_and_rule():
    bad = slice_134()
    bad["spec"]["devices"][3]["name"] = "Gpu-1"
    problem = validate_slice(bad, 34)[0]
    assert problem == Problem("spec.devices[3].name", problem.rule)
    assert str(problem).startswith('spec.devices[3].name: "Gpu-1" is not a DNS-1123 label')


def _set(path, value):
    """A mutation that sets a dotted path (``spec.pool.name``) on the slice; None deletes it."""

    def mutate(resource_slice):
        *parents, last = path.split(".")
        target = resource_slice
        for key in parents:
            target = target[key]
        if value is None:
            del target[last]
        else:
            target[last] = value

    return mutate


TOP_LEVEL = [
    ("apiVersion", "resource.k8s.io/v1beta2", "apiVersion", "must be resource.k8s.io/v1"),
    ("kind", "DeviceClass", "kind", "must be ResourceSlice"),
    ("status", {}, "status", "unknown field"),
    ("spec.sharedCounter", [], "spec.sharedCounter", "unknown field"),
    ("spec.pool.generations", 1, "spec.pool.generations", "unknown field"),
    ("spec", None, "spec", "required"),
    ("metadata.name", "Node-1", "metadata.name", "not a DNS-1123 subdomain"),
    ("metadata.name", "node_1", "metadata.name", "not a DNS-1123 subdomain"),
    ("metadata.name", "a" * 254, "metadata.name", "not a DNS-1123 subdomain"),
    ("metadata.name", "node-1.", "metadata.name", "not a DNS-1123 subdomain"),
    ("metadata.name", None, "metadata.name", "name or generateName is required"),
    ("metadata.generateName", "Node-", "metadata.generateName", "not a DNS-1123 subdomain prefix"),
    ("spec.driver", None, "spec.driver", "required"),
    ("spec.driver", "", "spec.driver", "must not be empty"),
    ("spec.driver", "g" * 61 + ".io", "spec.driver", "longer than 63"),
    ("spec.driver", "gpu_deckhouse.io", "spec.driver", "not a DNS-1123 subdomain"),
    ("spec.driver", "gpu.deckhouse.io.", "spec.driver", "not a DNS-1123 subdomain"),
    ("spec.pool", None, "spec.pool", "required"),
    ("spec.pool.name", "", "spec.pool.name", "must not be empty"),
    ("spec.pool.name", None, "spec.pool.name", "required"),
    ("spec.pool.name", "GPUs/x", "spec.pool.name", 'segment 1 "GPUs"'),
    ("spec.pool.name", "gpus//x", "spec.pool.name", 'segment 2 ""'),
    ("spec.pool.name", "/x", "spec.pool.name", 'segment 1 ""'),
    ("spec.pool.name", "x/", "spec.pool.name", 'segment 2 ""'),
    ("spec.pool.name", "gpus/node_1", "spec.pool.name", "not a DNS-1123 subdomain"),
    ("spec.pool.name", "/".join(["a" * 100, "b" * 100, "c" * 53]), "spec.pool.name", "more than 253"),
    ("spec.pool.generation", -1, "spec.pool.generation", "integer ≥ 0"),
    ("spec.pool.generation", "1", "spec.pool.generation", "integer ≥ 0"),
    ("spec.pool.generation", True, "spec.pool.generation", "integer ≥ 0"),
    ("spec.pool.resourceSliceCount", 0, "spec.pool.resourceSliceCount", "integer > 0"),
    ("spec.pool.resourceSliceCount", None, "spec.pool.resourceSliceCount", "integer > 0"),
    ("spec.pool.resourceSliceCount", -1, "spec.pool.resourceSliceCount", "integer > 0"),
]


@pytest.mark.parametrize(("field", "value", "path", "fragment"), TOP_LEVEL, ids=lambda case: str(case)[:30])
@pytest.mark.parametrize("minor", [34, 35])
def test_slice_fields(minor, field, value, path, fragment):
    resource_slice = slice_134() if minor == 34 else counters_slice_135()
    _set(field, value)(resource_slice)
    assert_only(validate_slice(resource_slice, minor), path, fragment)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("spec.driver", "GPU.Deckhouse.io"),  # upper case passes: the check lower-cases first
        ("spec.pool.name", "gpus/node-1.example.com/x"),
        ("spec.pool.generation", None),  # reads as 0
        ("spec.pool.generation", 0),
        ("metadata.generateName", "node-1-"),
    ],
)
def test_accepted_variants(field, value):
    resource_slice = slice_134()
    _set(field, value)(resource_slice)
    if field == "metadata.generateName":
        del resource_slice["metadata"]["name"]
    assert validate_slice(resource_slice, 34) == []


SELECTOR = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}
    ]
}
NODE_SELECTION = [
    ({"nodeName": None}, "spec", "(set: none)"),
    ({"allNodes": True}, "spec", "(set: nodeName, allNodes)"),
    ({"nodeName": ""}, "spec.nodeName", "not a DNS-1123 subdomain"),
    ({"nodeName": "Node_1"}, "spec.nodeName", "not a DNS-1123 subdomain"),
    ({"nodeName": None, "allNodes": False}, "spec.allNodes", "may only be set to true"),
    (
        {"nodeName": None, "perDeviceNodeSelection": False},
        "spec.perDeviceNodeSelection",
        "may only be set to true",
    ),
    (
        {"nodeName": None, "nodeSelector": {"nodeSelectorTerms": []}},
        "spec.nodeSelector.nodeSelectorTerms",
        "at least one",
    ),
    (
        {"nodeName": None, "nodeSelector": {"nodeSelectorTerms": SELECTOR["nodeSelectorTerms"] * 2}},
        "spec.nodeSelector.nodeSelectorTerms",
        "exactly one node selector term",
    ),
    (
        {
            "nodeName": None,
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]},
        },
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values",
        "must not be empty with operator In",
    ),
    (
        {
            "nodeName": None,
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]},
        },
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator",
        "is not one of In, NotIn",
    ),
    (
        {
            "nodeName": None,
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "-a", "operator": "Exists"}]}]
            },
        },
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].key",
        "not a valid label key",
    ),
    (
        {
            "nodeName": None,
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}
                ]
            },
        },
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key",
        "not a node field",
    ),
]


@pytest.mark.parametrize(("spec", "path", "fragment"), NODE_SELECTION, ids=lambda case: str(case)[:40])
@pytest.mark.parametrize("minor", [34, 35])
def test_node_selection(minor, spec, path, fragment):
    resource_slice = counters_slice_135()
    resource_slice["spec"] |= spec
    resource_slice["spec"] = {
        key: value for key, value in resource_slice["spec"].items() if value is not None
    }
    assert_only(validate_slice(resource_slice, minor), path, fragment)


@pytest.mark.parametrize("spec", [{"allNodes": True}, {"nodeSelector": SELECTOR}])
def test_other_node_selections_are_valid(spec):
    resource_slice = counters_slice_135()
    del resource_slice["spec"]["nodeName"]
    resource_slice["spec"] |= spec
    assert validate_slice(resource_slice, 35) == []
