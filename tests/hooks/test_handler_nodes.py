"""The handler_nodes hook, run by the deckhouse library's testrun over binding contexts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import yaml
from deckhouse import hook

from tests.hooks.conftest import HOOKS, load_hook

HOOK = load_hook("handler_nodes")


def gpu(node: Any, ready: Any = "True") -> dict[str, Any]:
    return {"filterResult": {"node": node, "driverReady": ready}}


def node(name: Any, **labels: str) -> dict[str, Any]:
    return {"filterResult": {"name": name, "labels": labels}}


def run(gpus: list[Any], nodes: list[Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    context = [{"binding": "main", "type": "Group", "snapshots": {"physical_gpus": gpus, "nodes": nodes}}]
    values = {"global": {}, "gpu": {**(settings or {}), "internal": {}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    internal: dict[str, Any] = out.values["gpu"]["internal"]
    return internal


def test_nodes_with_a_driver_ready_gpu_are_listed_sorted_with_a_hash() -> None:
    internal = run([gpu("w2"), gpu("w1"), gpu("w1")], [node("w1"), node("w2"), node("cpu-only")])
    assert internal["handlerNodes"] == ["w1", "w2"]
    assert len(internal["handlerNodesHash"]) == 16


def test_the_hash_changes_with_the_list_and_only_with_it() -> None:
    one = run([gpu("w1")], [node("w1"), node("w2")])["handlerNodesHash"]
    again = run([gpu("w1"), gpu("w2", "False")], [node("w2"), node("w1")])["handlerNodesHash"]
    two = run([gpu("w1"), gpu("w2")], [node("w1"), node("w2")])["handlerNodesHash"]
    assert one == again
    assert one != two


@pytest.mark.parametrize("ready", ["False", "Unknown", None, True])
def test_a_driver_that_is_not_ready_keeps_the_node_out(ready: Any) -> None:
    assert run([gpu("w1", ready)], [node("w1")])["handlerNodes"] == []


def test_the_validator_runs_on_managed_gpu_nodes_whatever_their_readiness() -> None:
    gpus = [gpu("w1", "False"), gpu("w2", "Unknown"), gpu("w3"), gpu("w4", None), gpu("gone")]
    nodes = [node("w1"), node("w2"), node("w3"), node("w4", **{"gpu.deckhouse.io/disabled": ""}), node("c")]
    internal = run(gpus, nodes)
    assert internal["validatorNodes"] == ["w1", "w2", "w3"]
    assert internal["handlerNodes"] == ["w3"]


def test_one_ready_gpu_is_enough_for_its_node() -> None:
    assert run([gpu("w1", "False"), gpu("w1", "True")], [node("w1")])["handlerNodes"] == ["w1"]


def test_opted_out_nodes_are_left_out_whatever_the_label_value() -> None:
    nodes = [node("w1", **{"gpu.deckhouse.io/disabled": ""}), node("w2")]
    assert run([gpu("w1"), gpu("w2")], nodes)["handlerNodes"] == ["w2"]


def test_a_custom_opt_out_label_and_node_selector_apply() -> None:
    settings = {"managedNodes": {"optOutLabel": "example.com/no-gpu", "nodeSelector": {"pool": "gpu"}}}
    nodes = [
        node("w1", pool="gpu"),
        node("w2", pool="gpu", **{"example.com/no-gpu": "true"}),
        node("w3", pool="cpu"),
        node("w4", pool="gpu", **{"gpu.deckhouse.io/disabled": "true"}),  # not the label in use
    ]
    gpus = [gpu(name) for name in ("w1", "w2", "w3", "w4")]
    assert run(gpus, nodes, settings)["handlerNodes"] == ["w1", "w4"]


def test_a_gpu_of_a_node_that_is_gone_is_ignored() -> None:
    assert run([gpu("w1"), gpu("deleted")], [node("w1")])["handlerNodes"] == ["w1"]


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
    assert run(gpus, nodes)["handlerNodes"] == ["w1"]


def test_no_snapshots_give_an_empty_list() -> None:
    context = [{"binding": "main", "type": "Group", "snapshots": {}}]
    out = hook.testrun(HOOK.main, binding_context=context, initial_values={"global": {}, "gpu": {}})
    assert out.values["gpu"]["internal"]["handlerNodes"] == []


def test_the_values_patch_touches_only_the_internal_values() -> None:
    context = [
        {
            "binding": "main",
            "type": "Group",
            "snapshots": {"physical_gpus": [gpu("w1")], "nodes": [node("w1")]},
        }
    ]
    values = {"global": {}, "gpu": {"logLevel": "Info", "internal": {}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    paths = sorted(patch["path"] for patch in out.values_patches.data)
    assert paths == [
        "/gpu/internal/handlerNodes",
        "/gpu/internal/handlerNodesHash",
        "/gpu/internal/validatorNodes",
    ]


def test_the_hook_prints_a_valid_config_when_asked() -> None:
    # addon-operator runs every hook once with --config to learn its bindings.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOKS), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(HOOKS / "handler_nodes.py"), "--config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    config = yaml.safe_load(done.stdout)
    assert config["configVersion"] == "v1"
    bindings = {binding["name"]: binding for binding in config["kubernetes"]}
    assert set(bindings) == {"physical_gpus", "nodes"}
    assert bindings["physical_gpus"]["kind"] == "PhysicalGPU"
    assert bindings["physical_gpus"]["jqFilter"].startswith("{node: .status.nodeInfo.nodeName")
    assert {binding["group"] for binding in bindings.values()} == {"main"}
    assert os.access(HOOKS / "handler_nodes.py", os.X_OK)


def jq(program: str, document: dict[str, Any]) -> Any:
    done = subprocess.run(
        ["jq", "-c", program], input=json.dumps(document), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_jq_filters_extract_what_the_hook_reads() -> None:
    # shell-operator runs them with jq semantics; the system jq checks the same program.
    from lib.handler_nodes import NODE_FILTER, PHYSICAL_GPU_FILTER  # noqa: PLC0415

    conditions = [{"type": "HardwareHealthy", "status": "False"}, {"type": "DriverReady", "status": "True"}]
    card = {
        "metadata": {"name": "w1-0000-17-00-0"},
        "status": {"nodeInfo": {"nodeName": "w1"}, "conditions": conditions},
    }
    assert jq(PHYSICAL_GPU_FILTER, card) == {"node": "w1", "driverReady": "True"}
    assert jq(PHYSICAL_GPU_FILTER, {"metadata": {"name": "new"}}) == {"node": None, "driverReady": "Unknown"}
    labelled = {"metadata": {"name": "w1", "labels": {"pool": "gpu"}}}
    assert jq(NODE_FILTER, labelled) == {"name": "w1", "labels": {"pool": "gpu"}}
    assert jq(NODE_FILTER, {"metadata": {"name": "w2"}}) == {"name": "w2", "labels": {}}
