# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The derive_settings hook and dra.migProfiles: rules passed on normalised, a dead rule refused."""

from __future__ import annotations

from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook

HOOK = load_hook("derive_settings")
H100 = "h100-sxm5-80gb"


def run(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    context = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    values = {"global": {}, "gpu": {"dra": {"migProfiles": rules}, "internal": {}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    result: list[dict[str, Any]] = out.values["gpu"]["internal"]["settings"]["dra"]["migProfiles"]
    return result


def test_rules_keep_their_order_with_a_selector_and_sorted_profiles() -> None:
    rules: list[dict[str, Any]] = [
        {"device": H100, "nodeSelector": {"pool": "inference", "a": "b"}, "profiles": ["1g.20gb", "1g.10gb"]},
        {"device": H100, "profiles": ["7g.80gb", "1g.10gb", "7g.80gb"]},
    ]
    assert run(rules) == [
        {"device": H100, "nodeSelector": {"a": "b", "pool": "inference"}, "profiles": ["1g.10gb", "1g.20gb"]},
        {"device": H100, "nodeSelector": {}, "profiles": ["1g.10gb", "7g.80gb"]},
    ]


def test_no_rule_is_every_profile_everywhere() -> None:
    assert run([]) == []


def test_a_rule_that_could_never_apply_fails_the_hook_with_its_index() -> None:
    rules = [
        {"device": H100, "nodeSelector": {"pool": "x"}, "profiles": ["1g.10gb"]},
        {"device": H100, "nodeSelector": {"pool": "x"}, "profiles": ["7g.80gb"]},
    ]
    with pytest.raises(ValueError, match=r"dra\.migProfiles\[1\] repeats the device 'h100-sxm5-80gb'"):
        run(rules)
