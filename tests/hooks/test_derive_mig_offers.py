# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""dra.migOffers: on a 1.34-1.36 API server every GPU Pod costs the scheduler about (nodes in the
cluster) x (nodes offering dynamic MIG) (docs/DRA.md, "Scale"). Auto offers dynamic MIG on every
MIG-capable node while that product is at most 16 x 16, and only on nodes that opt in past it;
1.37 has the fix, and an explicit setting always wins."""

from __future__ import annotations

from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook

HOOK = load_hook("derive_settings")
LABELS = load_hook("gpu_node_labels")


def offers(
    setting: str | None, mig_nodes: int, nodes: int, version: str | None, previous: str | None = None
) -> dict[str, Any]:
    """What the gpu_node_labels hook decides for a cluster of ``nodes`` Nodes, ``mig_nodes`` of
    them with an H100, and what derive_settings then passes to gpu-handler."""
    gpus = [
        {"filterResult": {"node": f"n{i}", "driverReady": "True", "migSupported": True}}
        for i in range(mig_nodes)
    ]
    snapshot = [{"filterResult": {"name": f"n{i}", "labels": {}}} for i in range(nodes)]
    context = [{"binding": "main", "type": "Group", "snapshots": {"physical_gpus": gpus, "nodes": snapshot}}]
    gpu: dict[str, Any] = {"internal": {}}
    if previous:
        gpu["internal"]["migOffers"] = {"mode": previous, "reason": "HighSchedulerCost"}
    if setting:
        gpu["dra"] = {"migOffers": setting}
    global_values = {"discovery": {"kubernetesVersion": version}} if version else {}
    out = hook.testrun(
        LABELS.main, binding_context=context, initial_values={"global": global_values, "gpu": gpu}
    )
    decided: dict[str, Any] = out.values["gpu"]["internal"].get(
        "migOffers", {"mode": "AllNodes", "reason": "-"}
    )
    render = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    derived = hook.testrun(HOOK.main, binding_context=render, initial_values=out.values)
    passed: dict[str, Any] = derived.values["gpu"]["internal"]["settings"]["dra"]["migOffers"]
    if setting in (None, "Auto") and "migOffers" in out.values["gpu"]["internal"]:
        assert passed == decided
    return passed


@pytest.mark.parametrize("version", ["1.34.9", "1.35.6", "v1.36.2", "1.36", None])
def test_auto_opts_in_once_the_scheduler_would_pay_too_much(version: str | None) -> None:
    low = {"mode": "AllNodes", "reason": "LowSchedulerCost"}
    high = {"mode": "OptIn", "reason": "HighSchedulerCost"}
    assert offers(None, 16, 16, version) == low
    assert offers(None, 17, 17, version) == high
    # A few MIG nodes among many: every node the scheduler tries pays for each of them.
    assert offers(None, 2, 128, version)["mode"] == "AllNodes"
    assert offers(None, 2, 129, version)["mode"] == "OptIn"
    assert offers(None, 16, 200, version)["mode"] == "OptIn"
    assert offers(None, 0, 500, version)["mode"] == "AllNodes"  # nobody publishes counters


@pytest.mark.parametrize("version", ["1.37.0", "1.38.1"])
def test_auto_offers_everywhere_on_a_fixed_scheduler(version: str) -> None:
    assert offers("Auto", 300, 300, version) == {"mode": "AllNodes", "reason": "SchedulerScales"}


def test_auto_goes_back_only_well_below_the_budget() -> None:
    """A cluster hovering at the line must not roll gpu-handler on every node each time."""
    assert offers(None, 16, 16, "1.35.6", previous="OptIn")["mode"] == "OptIn"
    assert offers(None, 14, 14, "1.35.6", previous="OptIn")["mode"] == "OptIn"  # 196 > 192
    assert offers(None, 13, 14, "1.35.6", previous="OptIn")["mode"] == "AllNodes"  # 182
    assert offers(None, 16, 16, "1.35.6", previous="AllNodes")["mode"] == "AllNodes"


def test_a_steady_cluster_renders_nothing() -> None:
    """The decision is written only when it changes: a node coming or going re-renders nothing."""
    gpus = [{"filterResult": {"node": "n0", "driverReady": "True", "migSupported": True}}]
    nodes = [{"filterResult": {"name": f"n{i}", "labels": {}}} for i in range(3)]
    context = [{"binding": "main", "type": "Group", "snapshots": {"physical_gpus": gpus, "nodes": nodes}}]
    out = hook.testrun(
        LABELS.main, binding_context=context, initial_values={"global": {}, "gpu": {"internal": {}}}
    )
    assert out.values_patches.data == []


@pytest.mark.parametrize("setting", ["AllNodes", "OptIn"])
def test_an_explicit_setting_always_wins(setting: str) -> None:
    for mig, nodes, version in ((0, 0, "1.35.6"), (300, 300, "1.35.6"), (300, 300, "1.37.0")):
        assert offers(setting, mig, nodes, version)["mode"] == setting
        assert offers(setting, mig, nodes, version)["reason"] == "Configured"
