# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""dra.migProfiles from the ModuleConfig to gpu-handler: what the schema accepts and refuses, and
the DaemonSet's MIG_PROFILES, which the handler's own parser reads back as the rules written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deckhouse_gpu.cmd.gpu_handler.wiring import mig_profile_rules
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from tests.module.helm_render_sets import RENDERED, env, handler, own_containers
from tests.support.helm_chart import render
from tests.support.module_values import load_schema, module_values, problems

CONFIG = load_schema("config-values.yaml")
H100 = "h100-sxm5-80gb"
RULES = [
    {"device": H100, "nodeSelector": {"node.deckhouse.io/group": "inference"}, "profiles": ["1g.10gb"]},
    {"device": H100, "profiles": ["7g.80gb", "3g.40gb", "1g.10gb+me"]},
    {"device": "a30-pcie", "profiles": []},
]


@pytest.mark.parametrize(
    ("rule", "complaint"),
    [
        ({"profiles": ["1g.10gb"]}, "dra.migProfiles.0: 'device' is a required property"),
        ({"device": H100}, "dra.migProfiles.0: 'profiles' is a required property"),
        ({"device": H100, "profiles": ["1g.10GB"]}, "dra.migProfiles.0.profiles.0: '1g.10GB' does not match"),
        ({"device": H100, "profiles": ["all"]}, "dra.migProfiles.0.profiles.0: 'all' does not match"),
        ({"device": "-h100", "profiles": []}, "dra.migProfiles.0.device: '-h100' does not match"),
        ({"device": H100, "profiles": [], "nodes": {}}, "Additional properties are not allowed ('nodes'"),
        ({"device": H100, "profiles": [], "nodeSelector": {"a": 1}}, "1 is not of type 'string'"),
    ],
)
def test_the_schema_refuses_malformed_rules(rule: dict[str, Any], complaint: str) -> None:
    found = problems(CONFIG, {"dra": {"migProfiles": [rule]}})
    assert any(complaint in problem for problem in found), found


def test_the_schema_accepts_the_documented_rules() -> None:
    assert problems(CONFIG, {"dra": {"migProfiles": RULES}}) == []


def test_by_default_the_handler_gets_no_policy_and_offers_every_profile() -> None:
    (main,) = own_containers(handler(RENDERED["defaults"]))
    assert "MIG_PROFILES" not in env(main)  # no rule: the pod template is as before the setting


def test_the_rules_reach_the_handler_as_the_operator_wrote_them() -> None:
    (main,) = own_containers(handler(render(module_values({"dra": {"migProfiles": RULES}}))))
    text = env(main)["MIG_PROFILES"]
    assert json.loads(text)[0]["nodeSelector"] == {"node.deckhouse.io/group": "inference"}
    assert mig_profile_rules(text) == (
        MigProfileRule(H100, frozenset({"1g.10gb"}), (("node.deckhouse.io/group", "inference"),)),
        MigProfileRule(H100, frozenset({"7g.80gb", "3g.40gb", "1g.10gb+me"})),
        MigProfileRule("a30-pcie", frozenset()),
    )
