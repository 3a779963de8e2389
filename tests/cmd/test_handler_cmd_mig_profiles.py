# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's MIG profile policy: ``--mig-profiles`` (env MIG_PROFILES, from the module setting
``dra.migProfiles``) on ``run`` and ``render-slices``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from deckhouse_gpu.cmd.gpu_handler.main import main, parse_args
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from testkit.gpu_objects import ready_card

H100 = "h100-sxm5-80gb"
RULES = [
    {"device": H100, "nodeSelector": {"pool": "inference"}, "profiles": ["1g.10gb"]},
    {"device": H100, "profiles": ["7g.80gb"]},
]


def test_run_reads_the_rules_from_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("MIG_PROFILES", raising=False)
    assert parse_args(["run", "--node-name", "w1"]).mig_profiles == ()
    monkeypatch.setenv("MIG_PROFILES", json.dumps(RULES))
    assert parse_args(["run", "--node-name", "w1"]).mig_profiles == (
        MigProfileRule(H100, frozenset({"1g.10gb"}), (("pool", "inference"),)),
        MigProfileRule(H100, frozenset({"7g.80gb"})),
    )
    given = json.dumps([{"device": "a30-pcie", "profiles": []}])
    assert parse_args(["run", "--node-name", "w1", "--mig-profiles", given]).mig_profiles == (
        MigProfileRule("a30-pcie", frozenset()),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('[{"device": "h100-sxm5-80gb", "profiles": ["big"]}]', "'big' is not a MIG profile name"),
        ("[{", "not valid JSON"),
    ],
)
def test_a_malformed_policy_stops_the_handler_with_the_reason(monkeypatch, capsys, value, message):
    monkeypatch.setenv("MIG_PROFILES", value)
    with pytest.raises(SystemExit) as stopped:
        parse_args(["run", "--node-name", "w1"])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("labels", "profiles"), [("", {"7g.80gb"}), ("pool=inference", {"1g.10gb"})])
def test_render_slices_offers_the_profiles_of_the_rule_the_node_matches(
    tmp_path: Path, capsys, monkeypatch, labels, profiles
):
    monkeypatch.delenv("MIG_PROFILES", raising=False)
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump_all([ready_card("w1", "0000:17:00.0", "h100-80gb")]))
    argv = ["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(path)]
    argv += ["--node-labels", labels, "--mig-profiles", json.dumps(RULES)]
    assert main(argv) == 0
    slices = list(yaml.safe_load_all(capsys.readouterr().out))
    assert validate_pool(slices, 35) == []
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    offered = {d["attributes"]["migProfile"]["string"] for d in devices if "migProfile" in d["attributes"]}
    assert offered == profiles
    assert sum(1 for d in devices if d["attributes"]["deviceType"]["string"] == "Physical") == 1
