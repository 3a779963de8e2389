# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""dra.migOffers Auto end to end, as Deckhouse runs the module: the gpu_node_labels hook sees the
nodes, derive_settings passes the decision on, the real Helm renders gpu-handler's MIG_OFFERS, and
gpu-handler started with that environment offers dynamic MIG or not. The switch-over cases: nodes
joining past the budget, a version upgrade to a scheduler with the fix, and nodes leaving again."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from deckhouse import hook

from deckhouse_gpu.cmd.gpu_handler.main import main
from testkit.gpu_objects import ready_card
from tests.hooks.conftest import load_hook
from tests.module.helm_render_sets import apply_values_patches, env, own_containers
from tests.support.helm_chart import render
from tests.support.module_values import module_values

LABELS = load_hook("gpu_node_labels")
DERIVE = load_hook("derive_settings")


def run_module(values: dict[str, Any], mig_nodes: int, cpu_nodes: int) -> dict[str, Any]:
    """One reconcile of the module: the node-labels hook, then derive_settings before Helm."""
    gpus = [
        {"filterResult": {"node": f"gpu-{i}", "driverReady": "True", "migSupported": True}}
        for i in range(mig_nodes)
    ]
    nodes = [{"filterResult": {"name": f"gpu-{i}", "labels": {}}} for i in range(mig_nodes)]
    nodes += [{"filterResult": {"name": f"cpu-{i}", "labels": {}}} for i in range(cpu_nodes)]
    context = [{"binding": "main", "type": "Group", "snapshots": {"physical_gpus": gpus, "nodes": nodes}}]
    out = hook.testrun(LABELS.main, binding_context=context, initial_values=values)
    values = apply_values_patches(copy.deepcopy(values), out.values_patches.data)
    before_helm = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    out = hook.testrun(DERIVE.main, binding_context=before_helm, initial_values=values)
    return apply_values_patches(values, out.values_patches.data)


def handler_env(values: dict[str, Any]) -> str:
    daemonset = render(values).get("DaemonSet", "gpu-handler")
    handler = next(c for c in own_containers(daemonset) if c["name"] == "gpu-handler")
    return str(env(handler)["MIG_OFFERS"])


def mig_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, mode: str) -> int:
    """How many MIG devices gpu-handler, started with MIG_OFFERS=mode, offers on an unlabelled node."""
    monkeypatch.setenv("MIG_OFFERS", mode)
    monkeypatch.delenv("MIG_PROFILES", raising=False)
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump_all([ready_card("gpu-0", "0000:17:00.0", "h100-80gb")]))
    assert main(["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(path)]) == 0
    slices = list(yaml.safe_load_all(capsys.readouterr().out))
    return sum(1 for s in slices for d in s["spec"].get("devices", []) if "migProfile" in d["attributes"])


def test_nodes_joining_past_the_budget_then_an_upgrade_then_nodes_leaving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    values = module_values()
    values["global"]["discovery"] = {"kubernetesVersion": "1.35.6"}

    values = run_module(values, mig_nodes=8, cpu_nodes=8)  # 8 x 16 = 128: within 16 x 16
    assert handler_env(values) == "AllNodes"
    assert mig_devices(tmp_path, monkeypatch, capsys, handler_env(values)) > 0

    values = run_module(values, mig_nodes=20, cpu_nodes=10)  # 20 x 30 = 600: past it
    assert values["gpu"]["internal"]["migOffers"] == {"mode": "OptIn", "reason": "HighSchedulerCost"}
    assert handler_env(values) == "OptIn"
    assert mig_devices(tmp_path, monkeypatch, capsys, handler_env(values)) == 0

    values["global"]["discovery"] = {"kubernetesVersion": "1.37.1"}  # the scheduler has the fix
    values = run_module(values, mig_nodes=20, cpu_nodes=10)
    assert values["gpu"]["internal"]["migOffers"] == {"mode": "AllNodes", "reason": "SchedulerScales"}
    assert handler_env(values) == "AllNodes"

    values["global"]["discovery"] = {"kubernetesVersion": "1.36.2"}  # back on a paying scheduler
    values = run_module(values, mig_nodes=20, cpu_nodes=10)
    assert handler_env(values) == "OptIn"
    values = run_module(values, mig_nodes=13, cpu_nodes=3)  # 13 x 16 = 208: above 3/4 (192) still
    assert handler_env(values) == "OptIn"
    values = run_module(values, mig_nodes=10, cpu_nodes=4)  # 10 x 14 = 140: back
    assert handler_env(values) == "AllNodes"


def test_an_explicit_setting_renders_at_once_whatever_the_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    values = module_values({"dra": {"migOffers": "OptIn"}})
    values["global"]["discovery"] = {"kubernetesVersion": "1.35.6"}
    values = run_module(values, mig_nodes=1, cpu_nodes=0)
    assert handler_env(values) == "OptIn"
    assert mig_devices(tmp_path, monkeypatch, capsys, "OptIn") == 0
    values = module_values({"dra": {"migOffers": "AllNodes"}})
    values["global"]["discovery"] = {"kubernetesVersion": "1.35.6"}
    assert handler_env(run_module(values, mig_nodes=300, cpu_nodes=300)) == "AllNodes"
