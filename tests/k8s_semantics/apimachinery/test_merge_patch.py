# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import apply_patch, create_patch

CASES = [
    ({}, {}),
    ({"a": 1}, {"a": 1}),
    ({"a": 1}, {"a": 2}),
    ({"a": 1, "b": 2}, {"b": 2}),
    ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}),
    ({"a": {"x": 1}}, {"a": {"x": 1, "z": {"deep": [1, 2]}}}),
    ({"a": [1, 2]}, {"a": [2]}),
    ({"a": {"x": 1}}, {"a": "scalar now"}),
    ({"a": "scalar"}, {"a": {"x": 1}}),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_patch_turns_old_into_new(old, new):
    assert apply_patch(old, create_patch(old, new)) == new


def test_patch_is_minimal_and_uses_null_for_removals():
    old = {"keep": {"same": 1, "gone": 2}, "list": [1]}
    new = {"keep": {"same": 1}, "list": [1], "added": True}
    assert create_patch(old, new) == {"keep": {"gone": None}, "added": True}
    assert create_patch(new, new) == {}


def test_apply_does_not_mutate_its_inputs():
    target = {"a": {"b": 1}}
    patch = {"a": {"c": 2}}
    result = apply_patch(target, patch)
    assert target == {"a": {"b": 1}}
    assert result == {"a": {"b": 1, "c": 2}}
    result["a"]["b"] = 5
    assert target["a"]["b"] == 1
