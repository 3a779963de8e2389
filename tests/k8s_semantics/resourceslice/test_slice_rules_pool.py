# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Pool-wide ResourceSlice rules: one identity and generation, unique names, 1.35 cross-slice counters."""

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from tests.support.resource_slices import (
    assert_only,
    consumes,
    counter_set,
    counters_slice_135,
    devices_slice_135,
    mig,
    pool_135,
    resource_slice,
    slice_134,
)


def _pool_134():
    """Two 1.34 card slices: each holds its own counter set and the devices consuming it."""
    first, second = slice_134(), slice_134()
    for each in (first, second):
        each["spec"]["pool"]["resourceSliceCount"] = 2
    second["metadata"]["name"] = "node-1-gpu-deckhouse-io-card-1"
    second["spec"]["sharedCounters"] = [counter_set("card-1")]
    second["spec"]["devices"] = [
        mig("gpu-1-mig-1g-6gb-0") | {"consumesCounters": consumes("6Gi", "14", "card-1")}
    ]
    return [first, second]


def test_valid_pools():
    assert validate_pool(_pool_134(), 34) == []
    assert validate_pool(pool_135(), 35) == []
    assert validate_pool([], 35) == []


def _spec(slices, index):
    return slices[index]["spec"]


POOL_CASES = [
    (
        lambda s: _spec(s, 1).update(driver="other.example.com"),
        "slices[1].spec.driver",
        '"other.example.com" differs from slices[0]',
    ),
    (
        lambda s: _spec(s, 1)["pool"].update(name="gpus/node-2"),
        "slices[1].spec.pool.name",
        '"gpus/node-2" differs from slices[0]',
    ),
    (
        lambda s: _spec(s, 1)["pool"].update(generation=2),
        "slices[0].spec.pool.generation",
        "1 is older than the pool's 2",
    ),
    (
        lambda s: _spec(s, 0)["pool"].update(resourceSliceCount=1),
        "slices[0].spec.pool.resourceSliceCount",
        "is 1, but the pool has 2",
    ),
    (
        lambda s: s[1]["metadata"].update(name=s[0]["metadata"]["name"]),
        "slices[1].metadata.name",
        "duplicates slices[0]",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "fragment"), POOL_CASES, ids=lambda case: str(case)[-40:])
@pytest.mark.parametrize("minor", [34, 35])
def test_pool_identity(minor, mutate, path, fragment):
    slices = _pool_134() if minor == 34 else pool_135()
    mutate(slices)
    assert_only(validate_pool(slices, minor), path, fragment)


def test_a_slice_too_many_is_counted_in_every_slice():
    slices = [*pool_135(), resource_slice("extra", 2, devices=[{"name": "gpu-9"}])]
    problems = validate_pool(slices, 35)
    assert [problem.path for problem in problems] == [
        f"slices[{index}].spec.pool.resourceSliceCount" for index in range(3)
    ]


@pytest.mark.parametrize("minor", [34, 35])
def test_device_names_are_unique_across_the_pool(minor):
    slices = (
        _pool_134()
        if minor == 34
        else [*pool_135(), resource_slice("more", 3, devices=[{"name": "gpu-1-shared"}])]
    )
    if minor == 34:
        _spec(slices, 1)["devices"][0]["name"] = "gpu-0"
    else:
        for each in slices:
            each["spec"]["pool"]["resourceSliceCount"] = 3
    path = "slices[1].spec.devices[0].name" if minor == 34 else "slices[2].spec.devices[0].name"
    expected = (
        "duplicates slices[0].spec.devices[0].name"
        if minor == 34
        else "duplicates slices[1].spec.devices[3].name"
    )
    assert_only(validate_pool(slices, minor), path, expected)


def test_1_35_counter_set_names_are_unique_across_the_pool():
    slices = [*pool_135(), counters_slice_135(3)]
    slices[2]["metadata"]["name"] = "node-1-gpu-deckhouse-io-counters-1"
    for each in slices:
        each["spec"]["pool"]["resourceSliceCount"] = 3
    problem = '"card-0000-02-00-0" duplicates slices[0].spec.sharedCounters[0].name'
    assert_only(validate_pool(slices, 35), "slices[2].spec.sharedCounters[0].name", problem)


def test_1_35_references_must_resolve_somewhere_in_the_pool():
    slices = pool_135()
    _spec(slices, 1)["devices"][1]["consumesCounters"][0]["counterSet"] = "card-9"
    _spec(slices, 1)["devices"][2]["consumesCounters"][0]["counters"]["clocks"] = {"value": "1"}
    problems = validate_pool(slices, 35)
    assert [(problem.path, problem.rule) for problem in problems] == [
        (
            "slices[1].spec.devices[1].consumesCounters[0].counterSet",
            '"card-9" must name a counter set in the pool\'s sharedCounters (1.35)',
        ),
        (
            "slices[1].spec.devices[2].consumesCounters[0].counters[clocks]",
            'must name a counter of counter set "card-0000-02-00-0" in the pool\'s sharedCounters (1.35)',
        ),
    ]


def test_1_35_finds_the_set_in_any_slice_of_the_pool():
    slices = [devices_slice_135(3), counters_slice_135(3), counters_slice_135(3)]
    slices[2]["metadata"]["name"] = "node-1-gpu-deckhouse-io-counters-1"
    slices[2]["spec"]["sharedCounters"] = [counter_set("card-1")]
    _spec(slices, 0)["devices"][1]["consumesCounters"] = consumes("6Gi", "14", "card-1")
    assert validate_pool(slices, 35) == []


def test_1_34_does_not_resolve_references_across_slices():
    slices = _pool_134()
    _spec(slices, 1)["devices"][0]["consumesCounters"] = consumes("6Gi", "14")  # the set of slices[0]
    path = "slices[1].spec.devices[0].consumesCounters[0].counterSet"
    assert_only(
        validate_pool(slices, 34), path, "must name a counter set in this slice's sharedCounters (1.34)"
    )


def test_each_slice_can_be_left_to_validate_slice():
    slices = pool_135()
    _spec(slices, 1)["devices"][0]["name"] = "Gpu-0"
    assert_only(validate_pool(slices, 35), "slices[1].spec.devices[0].name", "not a DNS-1123 label")
    assert validate_pool(slices, 35, each_slice=False) == []


def test_malformed_slices_do_not_break_the_pool_checks():
    slices = [*pool_135(), {"spec": "nonsense"}, {"spec": {"devices": [None, {"consumesCounters": "x"}]}}]
    problems = validate_pool(slices, 35, each_slice=False)
    # A missing spec reads as no driver, no pool name and generation 0: all differ from slices[0].
    assert {problem.path for problem in problems} == {
        "slices[0].spec.pool.resourceSliceCount",
        "slices[1].spec.pool.resourceSliceCount",
        *(
            f"slices[{index}].spec.{field}"
            for index in (2, 3)
            for field in ("driver", "pool.name", "pool.generation")
        ),
    }
