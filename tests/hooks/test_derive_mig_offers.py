# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""dra.migOffers: Auto offers dynamic MIG on every node while few nodes can publish counters, and
only on nodes that opt in once more than 16 do on a 1.34-1.36 API server, whose scheduler pays
per Pod in proportion to the square of that number (docs/DRA.md, "Scale"); 1.37 has the fix."""

from __future__ import annotations

from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook

HOOK = load_hook("derive_settings")


def offers(
    setting: str | None, mig_nodes: int, version: str | None, previous: str | None = None
) -> dict[str, Any]:
    context = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    internal: dict[str, Any] = {"migCapableNodes": mig_nodes}
    if previous:
        internal["settings"] = {"dra": {"migOffers": {"mode": previous}}}
    gpu: dict[str, Any] = {"internal": internal}
    if setting:
        gpu["dra"] = {"migOffers": setting}
    global_values = {"discovery": {"kubernetesVersion": version}} if version else {}
    out = hook.testrun(
        HOOK.main, binding_context=context, initial_values={"global": global_values, "gpu": gpu}
    )
    result: dict[str, Any] = out.values["gpu"]["internal"]["settings"]["dra"]["migOffers"]
    return result


@pytest.mark.parametrize("version", ["1.34.9", "1.35.6", "v1.36.2", "1.36", None])
def test_auto_opts_in_past_16_mig_nodes_before_1_37(version: str | None) -> None:
    assert offers(None, 16, version) == {"mode": "AllNodes", "reason": "FewMIGNodes", "migNodes": 16}
    assert offers(None, 17, version) == {"mode": "OptIn", "reason": "ManyMIGNodes", "migNodes": 17}
    assert offers(None, 500, version)["mode"] == "OptIn"


@pytest.mark.parametrize("version", ["1.37.0", "1.38.1"])
def test_auto_offers_everywhere_on_a_fixed_scheduler(version: str) -> None:
    assert offers("Auto", 1000, version) == {
        "mode": "AllNodes",
        "reason": "SchedulerScales",
        "migNodes": 1000,
    }


def test_auto_goes_back_only_well_below_the_line() -> None:
    """A cluster hovering at the threshold must not roll gpu-handler on every node each time."""
    assert offers(None, 15, "1.35.6", previous="OptIn")["mode"] == "OptIn"
    assert offers(None, 13, "1.35.6", previous="OptIn")["mode"] == "OptIn"
    assert offers(None, 12, "1.35.6", previous="OptIn") == {
        "mode": "AllNodes",
        "reason": "FewMIGNodes",
        "migNodes": 12,
    }
    assert offers(None, 15, "1.35.6", previous="AllNodes")["mode"] == "AllNodes"


@pytest.mark.parametrize("setting", ["AllNodes", "OptIn"])
def test_an_explicit_setting_always_wins(setting: str) -> None:
    for nodes, version in ((0, "1.35.6"), (500, "1.35.6"), (500, "1.37.0")):
        assert offers(setting, nodes, version) == {"mode": setting, "reason": "Configured", "migNodes": nodes}
