# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceSlice size limits and counter sets: where 1.34 and 1.35 differ most."""

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_slice
from tests.support.resource_slices import (
    D,
    assert_only,
    check_first_device,
    consumes,
    counter_set,
    counters_slice_135,
    full_card,
    plain_devices,
    resource_slice,
    slice_134,
)


@pytest.mark.parametrize("minor", [34, 35])
def test_at_most_128_devices(minor):
    assert validate_slice(resource_slice("s", devices=plain_devices(128)), minor) == []
    problems = validate_slice(resource_slice("s", devices=plain_devices(129)), minor)
    assert_only(problems, "spec.devices", "129 devices, more than 128")


def test_70_counter_consuming_devices_are_fine_on_1_34_but_not_on_1_35():
    many = [full_card(f"gpu-{index}") for index in range(70)]
    assert validate_slice(resource_slice("s", sharedCounters=[counter_set()], devices=many), 34) == []
    problems = validate_slice(resource_slice("s", devices=many), 35)
    assert_only(
        problems, "spec.devices", "70 devices, more than 64 while a device has taints or consumesCounters"
    )


def test_on_1_35_one_tainted_device_is_enough_for_the_64_device_limit():
    many = plain_devices(65)
    assert validate_slice(resource_slice("s", devices=many), 35) == []
    many[64]["taints"] = [{"key": "gpu.deckhouse.io/unhealthy", "effect": "NoSchedule"}]
    assert_only(validate_slice(resource_slice("s", devices=many), 35), "spec.devices", "more than 64")
    assert validate_slice(resource_slice("s", devices=many), 34) == []


def _sets(*sizes):
    return [
        {"name": f"set-{index}", "counters": {f"c-{n}": {"value": "1"} for n in range(size)}}
        for index, size in enumerate(sizes)
    ]


def test_1_34_counts_shared_counters_over_all_sets():
    assert validate_slice(resource_slice("s", sharedCounters=_sets(16, 16)), 34) == []
    problems = validate_slice(resource_slice("s", sharedCounters=_sets(17, 16)), 34)
    assert_only(problems, "spec.sharedCounters", "33 counters in all sets, more than 32 (1.34)")
    assert validate_slice(resource_slice("s", sharedCounters=_sets(17, 16)), 35) == []


def test_1_35_limits_sets_per_slice_and_counters_per_set():
    assert validate_slice(resource_slice("s", sharedCounters=_sets(*[32] * 8)), 35) == []
    nine = validate_slice(resource_slice("s", sharedCounters=_sets(*[1] * 9)), 35)
    assert_only(nine, "spec.sharedCounters", "9 counter sets, more than 8 (1.35)")
    big = validate_slice(resource_slice("s", sharedCounters=_sets(1, 33)), 35)
    assert_only(big, "spec.sharedCounters[1].counters", "33 counters, more than 32 (1.35)")


def test_1_34_limits_consumed_counters_per_slice():
    sets = _sets(32)
    every_counter = [{"counterSet": "set-0", "counters": sets[0]["counters"]}]
    devices = [{"name": f"gpu-{index}", "consumesCounters": every_counter} for index in range(33)]
    assert validate_slice(resource_slice("s", sharedCounters=sets, devices=devices[:32]), 34) == []
    problems = validate_slice(resource_slice("s", sharedCounters=sets, devices=devices), 34)
    assert_only(problems, "spec.devices", "consume 1056 counters in all, more than 1024 (1.34)")


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"),
    [
        (
            lambda s: s["sharedCounters"].append(counter_set()),
            "spec.sharedCounters[1].name",
            "duplicates spec.sharedCounters[0]",
        ),
        (
            lambda s: s["sharedCounters"][0].update(name="Card-0"),
            "spec.sharedCounters[0].name",
            "not a DNS-1123 label",
        ),
        (
            lambda s: s["sharedCounters"][0].update(counters={}),
            "spec.sharedCounters[0].counters",
            "at least one counter",
        ),
        (lambda s: s["sharedCounters"][0].pop("name"), "spec.sharedCounters[0].name", "required"),
        (
            lambda s: s["sharedCounters"][0]["counters"].update(mem_ory={"value": "1"}),
            "spec.sharedCounters[0].counters[mem_ory]",
            "not a DNS-1123 label",
        ),
        (
            lambda s: s["sharedCounters"][0]["counters"].update(memory={"value": "24 Gi"}),
            "spec.sharedCounters[0].counters[memory].value",
            "not a Kubernetes quantity",
        ),
        (
            lambda s: s["sharedCounters"][0]["counters"].update(memory={}),
            "spec.sharedCounters[0].counters[memory].value",
            "required",
        ),
    ],
)
@pytest.mark.parametrize("minor", [34, 35])
def test_counter_sets(minor, mutate, path, fragment):
    resource_slice = counters_slice_135()
    mutate(resource_slice["spec"])
    assert_only(validate_slice(resource_slice, minor), path, fragment)


def test_1_34_references_resolve_inside_the_slice():
    resource_slice = slice_134()
    resource_slice["spec"]["devices"][1]["consumesCounters"] = consumes("6Gi", "14", set_name="elsewhere")
    problem_path = "spec.devices[1].consumesCounters[0].counterSet"
    assert_only(
        validate_slice(resource_slice, 34), problem_path, '"elsewhere" must name a counter set in this slice'
    )
    resource_slice = slice_134()
    resource_slice["spec"]["devices"][1]["consumesCounters"][0]["counters"]["clocks"] = {"value": "1"}
    problem_path = "spec.devices[1].consumesCounters[0].counters[clocks]"
    assert_only(validate_slice(resource_slice, 34), problem_path, "must name a counter of counter set")


TAINT = {"key": "gpu.deckhouse.io/unhealthy", "value": "xid-79", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("minor", "count", "valid"), [(34, 4, True), (34, 5, False), (35, 16, True), (35, 17, False)]
)
def test_taints_per_device(minor, count, valid):
    problems = check_first_device(minor, lambda d: d.update(taints=[TAINT] * count))
    if valid:
        assert problems == []
    else:
        assert_only(problems, f"{D}.taints", f"{count} taints, more than {count - 1} (1.{minor})")


@pytest.mark.parametrize(
    ("minor", "change", "path", "fragment"),
    [
        (34, {"effect": "None"}, ".effect", '"None" is not one of NoSchedule, NoExecute (1.34)'),
        (35, {"effect": "PreferNoSchedule"}, ".effect", "is not one of None, NoSchedule, NoExecute (1.35)"),
        (35, {"effect": None}, ".effect", "required"),
        (35, {"key": "bad key"}, ".key", "not a valid label key"),
        (35, {"key": None}, ".key", "required"),
        (35, {"value": "-bad-"}, ".value", "not a valid label value"),
        (35, {"reason": "x"}, ".reason", "unknown field"),
    ],
)
def test_taint_fields(minor, change, path, fragment):
    taint = {key: value for key, value in (TAINT | change).items() if value is not None}
    assert_only(
        check_first_device(minor, lambda d: d.update(taints=[taint])), f"{D}.taints[0]{path}", fragment
    )


def test_the_none_effect_is_new_in_1_35():
    assert check_first_device(35, lambda d: d.update(taints=[TAINT | {"effect": "None"}])) == []
