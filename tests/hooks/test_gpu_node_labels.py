# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The gpu_node_labels hook, run by the deckhouse library's testrun over binding contexts: the Node
label patches it asks Deckhouse to apply."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import hook_config, load_hook

HOOK = load_hook("gpu_node_labels")
VALIDATOR = "gpu.deckhouse.io/nvidia"
HANDLER = "gpu.deckhouse.io/driver-ready"
BOTH = {VALIDATOR: "true", HANDLER: "true"}


def gpu(node: Any, ready: Any = "True") -> dict[str, Any]:
    return {"filterResult": {"node": node, "driverReady": ready}}


def node(name: Any, **labels: str) -> dict[str, Any]:
    return {"filterResult": {"name": name, "labels": labels}}


def run_hook(
    gpus: list[Any], nodes: list[Any], settings: dict[str, Any] | None = None, binding: str = "main"
) -> Any:
    kind = "Group" if binding == "main" else binding
    context = [{"binding": binding, "type": kind, "snapshots": {"physical_gpus": gpus, "nodes": nodes}}]
    values = {"global": {}, "gpu": {**(settings or {}), "internal": {}}}
    return hook.testrun(HOOK.main, binding_context=context, initial_values=values)


def patches(
    gpus: list[Any], nodes: list[Any], settings: dict[str, Any] | None = None, binding: str = "main"
) -> dict[str, dict[str, Any]]:
    """Node name -> the labels its merge patch sets (None removes)."""
    out = run_hook(gpus, nodes, settings, binding)
    found: dict[str, dict[str, Any]] = {}
    for operation in out.kube_operations.data:
        assert operation["operation"] == "MergePatch"
        assert (operation["kind"], operation["apiVersion"], operation["namespace"]) == ("Node", "v1", "")
        assert operation["ignoreMissingObject"] is True
        assert set(operation["mergePatch"]) == {"metadata"}
        assert set(operation["mergePatch"]["metadata"]) == {"labels"}
        assert operation["name"] not in found, "one patch per node"
        found[operation["name"]] = operation["mergePatch"]["metadata"]["labels"]
    return found


def test_nodes_with_a_driver_ready_gpu_get_both_labels_and_cpu_nodes_none() -> None:
    found = patches([gpu("w2"), gpu("w1"), gpu("w1")], [node("w1"), node("w2"), node("cpu-only")])
    assert found == {"w1": BOTH, "w2": BOTH}


def test_a_steady_cluster_costs_no_write() -> None:
    nodes = [node("w1", **BOTH), node("w2", **{VALIDATOR: "true"}), node("cpu-only", pool="cpu")]
    assert patches([gpu("w1"), gpu("w2", "False")], nodes) == {}


@pytest.mark.parametrize("ready", ["False", "Unknown", None, True])
def test_a_driver_that_is_not_ready_gets_only_the_validator(ready: Any) -> None:
    assert patches([gpu("w1", ready)], [node("w1")]) == {"w1": {VALIDATOR: "true"}}


def test_a_driver_that_stops_being_ready_loses_the_handler_label_only() -> None:
    assert patches([gpu("w1", "False")], [node("w1", **BOTH)]) == {"w1": {HANDLER: None}}


def test_the_validator_runs_on_managed_gpu_nodes_whatever_their_readiness() -> None:
    gpus = [gpu("w1", "False"), gpu("w2", "Unknown"), gpu("w3"), gpu("w4", None), gpu("gone")]
    nodes = [node("w1"), node("w2"), node("w3"), node("w4", **{"gpu.deckhouse.io/disabled": ""}), node("c")]
    assert patches(gpus, nodes) == {
        "w1": {VALIDATOR: "true"},
        "w2": {VALIDATOR: "true"},
        "w3": BOTH,
    }


def test_one_ready_gpu_is_enough_for_its_node() -> None:
    assert patches([gpu("w1", "False"), gpu("w1", "True")], [node("w1")]) == {"w1": BOTH}


def test_opted_out_nodes_lose_the_labels_whatever_the_opt_out_value() -> None:
    nodes = [node("w1", **{"gpu.deckhouse.io/disabled": "", **BOTH}), node("w2")]
    assert patches([gpu("w1"), gpu("w2")], nodes) == {"w1": {VALIDATOR: None, HANDLER: None}, "w2": BOTH}


def test_a_label_put_on_by_hand_is_taken_off() -> None:
    assert patches([], [node("cpu", **{HANDLER: "true"})]) == {"cpu": {HANDLER: None}}
    # A wrong value is corrected, not removed, on a node that qualifies.
    assert patches([gpu("w1")], [node("w1", **{VALIDATOR: "yes", HANDLER: "true"})]) == {
        "w1": {VALIDATOR: "true"}
    }


def test_a_custom_opt_out_label_and_node_selector_apply() -> None:
    settings = {"managedNodes": {"optOutLabel": "example.com/no-gpu", "nodeSelector": {"pool": "gpu"}}}
    nodes = [
        node("w1", pool="gpu"),
        node("w2", pool="gpu", **{"example.com/no-gpu": "true"}),
        node("w3", pool="cpu"),
        node("w4", pool="gpu", **{"gpu.deckhouse.io/disabled": "true"}),  # not the label in use
    ]
    gpus = [gpu(name) for name in ("w1", "w2", "w3", "w4")]
    assert patches(gpus, nodes, settings) == {"w1": BOTH, "w4": BOTH}


def test_a_gpu_of_a_node_that_is_gone_is_ignored() -> None:
    assert patches([gpu("w1"), gpu("deleted")], [node("w1")]) == {"w1": BOTH}


def test_malformed_snapshot_entries_are_skipped_not_fatal() -> None:
    gpus = [
        gpu("w1"),
        {"filterResult": None},
        {},
        "not an object",
        gpu(None),
        gpu(""),
        gpu(["w2"]),
        {"filterResult": {"driverReady": "True"}},
    ]
    nodes = [node("w1"), {"filterResult": {"name": "w2", "labels": None}}, node(None), {"object": {}}, 7]
    assert patches(gpus, nodes) == {"w1": BOTH}


def test_no_snapshots_write_nothing() -> None:
    context = [{"binding": "main", "type": "Group", "snapshots": {}}]
    out = hook.testrun(HOOK.main, binding_context=context, initial_values={"global": {}, "gpu": {}})
    assert out.kube_operations.data == []


def test_the_hook_changes_no_values_so_node_changes_render_nothing() -> None:
    out = run_hook([gpu("w1")], [node("w1")])
    assert out.values_patches.data == []


def test_deleting_the_module_takes_every_owned_label_off() -> None:
    nodes = [node("w1", **BOTH), node("w2", **{VALIDATOR: "true"}, pool="gpu"), node("c", pool="cpu")]
    found = patches([gpu("w1")], nodes, binding="afterDeleteHelm")
    assert found == {"w1": {VALIDATOR: None, HANDLER: None}, "w2": {VALIDATOR: None}}


def test_a_settings_change_relabels_before_helm_runs() -> None:
    # The ModuleConfig now opts out a pool: beforeHelm carries the snapshots and the new settings.
    settings = {"managedNodes": {"nodeSelector": {"pool": "gpu"}}}
    nodes = [node("w1", pool="gpu", **BOTH), node("w2", pool="old", **BOTH)]
    found = patches([gpu("w1"), gpu("w2")], nodes, settings, binding="beforeHelm")
    assert found == {"w2": {VALIDATOR: None, HANDLER: None}}


def test_the_hook_prints_a_valid_config_when_asked() -> None:
    config = hook_config("gpu_node_labels")
    assert config["configVersion"] == "v1"
    assert (config["beforeHelm"], config["afterDeleteHelm"]) == (10, 10)
    bindings = {binding["name"]: binding for binding in config["kubernetes"]}
    assert set(bindings) == {"physical_gpus", "nodes"}
    assert bindings["physical_gpus"]["kind"] == "PhysicalGPU"
    assert bindings["physical_gpus"]["jqFilter"].startswith("{node: .status.nodeInfo.nodeName")
    assert {binding["group"] for binding in bindings.values()} == {"main"}


def jq(program: str, document: dict[str, Any]) -> Any:
    done = subprocess.run(
        ["jq", "-c", program], input=json.dumps(document), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_jq_filters_extract_what_the_hook_reads() -> None:
    # shell-operator runs them with jq semantics; the system jq checks the same program.
    from lib.gpu_node_labels import NODE_FILTER, PHYSICAL_GPU_FILTER  # noqa: PLC0415

    conditions = [{"type": "HardwareHealthy", "status": "False"}, {"type": "DriverReady", "status": "True"}]
    card = {
        "metadata": {"name": "w1-0000-17-00-0"},
        "status": {"nodeInfo": {"nodeName": "w1"}, "conditions": conditions},
    }
    assert jq(PHYSICAL_GPU_FILTER, card) == {"node": "w1", "driverReady": "True", "migSupported": False}
    assert jq(PHYSICAL_GPU_FILTER, {"metadata": {"name": "new"}}) == {
        "node": None,
        "driverReady": "Unknown",
        "migSupported": False,
    }
    labelled = {"metadata": {"name": "w1", "labels": {"pool": "gpu"}}}
    assert jq(NODE_FILTER, labelled) == {"name": "w1", "labels": {"pool": "gpu"}}
    assert jq(NODE_FILTER, {"metadata": {"name": "w2"}}) == {"name": "w2", "labels": {}}


def test_the_mig_capable_managed_nodes_and_every_node_are_counted_for_mig_offers() -> None:
    """dra.migOffers Auto decides on these counts (tests/hooks/test_derive_mig_offers.py)."""
    from lib.gpu_node_labels import cluster_nodes, mig_capable_nodes  # noqa: PLC0415

    capable = [
        {"filterResult": {"node": "a", "driverReady": "True", "migSupported": True}},
        {"filterResult": {"node": "a", "driverReady": "True", "migSupported": False}},
        {"filterResult": {"node": "b", "driverReady": "False", "migSupported": True}},
        {"filterResult": {"node": "t4", "driverReady": "True", "migSupported": False}},
        {"filterResult": {"node": "out", "driverReady": "True", "migSupported": True}},
        {"filterResult": {"node": "gone", "migSupported": True}},
    ]
    nodes = [node("a"), node("b"), node("t4"), node("out", **{"gpu.deckhouse.io/disabled": ""})]
    assert mig_capable_nodes(capable, nodes, {}) == 2
    assert cluster_nodes(nodes) == 4  # every Node, opted out or not: the scheduler tries them all
