# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The value sets the Helm template tests render the chart with, each rendered once by a real Helm 3
when this module is first imported, and the accessors those tests share: the pod spec, containers and
environment of a rendered workload.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook
from tests.support.helm_chart import Rendered, render
from tests.support.module_values import module_values

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": module_values(),
    "ha": module_values({"highAvailability": True}),
    "cluster-ha": module_values(cluster_ha=True),
    "containerised-driver": module_values(
        {"nvidiaDriverRoot": "/run/nvidia/driver", "cdiRoot": "/var/run/cdi"}
    ),
    "monitoring-off": module_values({"monitoring": {"dcgm": {"enabled": False}}}),
    "module-registry": module_values(
        {"logLevel": "Debug", "managedNodes": {"nodeSelector": {"node.deckhouse.io/group": "gpu"}}},
        registry={"base": "modules.example.com/gpu", "dockercfg": base64.b64encode(b"{}").decode()},
    ),
}
RENDERED = {name: render(values) for name, values in VALUE_SETS.items()}


# The cluster sizes the chart is rendered for: the values the gpu_node_labels hook writes for them.
GPU_NODE_COUNTS = (0, 1, 2, 500)
_NODE_LABELS_HOOK = load_hook("gpu_node_labels")


def gpu_cluster(gpu_nodes: int) -> dict[str, list[Any]]:
    """Snapshots as shell-operator hands them to the hook: GPU nodes with ready cards, CPU nodes."""
    gpus = [
        {"filterResult": {"node": f"gpu-{index}", "driverReady": "True"}}
        for index in range(gpu_nodes)
        for _card in range(2)
    ]
    nodes = [{"filterResult": {"name": f"gpu-{index}", "labels": {}}} for index in range(gpu_nodes)]
    nodes += [{"filterResult": {"name": f"cpu-{index}", "labels": {}}} for index in range(3)]
    return {"physical_gpus": gpus, "nodes": nodes}


def node_labels_hook_run(gpu_nodes: int) -> Any:
    context = [{"binding": "main", "type": "Group", "snapshots": gpu_cluster(gpu_nodes)}]
    return hook.testrun(_NODE_LABELS_HOOK.main, binding_context=context, initial_values=module_values())


def apply_values_patches(values: dict[str, Any], patches: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON patches a hook returns, applied as addon-operator does (add/replace/remove)."""
    for patch in patches:
        *parents, last = [part for part in patch["path"].split("/") if part]
        target = values
        for part in parents:
            target = target.setdefault(part, {})
        if patch["op"] == "remove":
            target.pop(last, None)
        else:
            target[last] = patch["value"]
    return values


def render_for_gpu_nodes(gpu_nodes: int) -> Rendered:
    """The chart as Deckhouse renders it for a cluster of ``gpu_nodes`` GPU nodes (and 3 CPU
    nodes): whatever the hook writes into the values goes into the render."""
    out = node_labels_hook_run(gpu_nodes)
    return render(apply_values_patches(module_values(), out.values_patches.data))


def with_webhook_values() -> dict[str, Any]:
    """The defaults once the webhook certificate hook has run: the webhook and its Secret render."""
    values = module_values()
    values["gpu"]["internal"]["webhookCert"] = {"ca": "CA PEM", "crt": "CRT PEM", "key": "KEY PEM"}
    return values


def every(check_name: str) -> list[Any]:
    return [pytest.param(rendered, id=f"{check_name}-{name}") for name, rendered in RENDERED.items()]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: dict[str, Any], init: bool = True) -> list[dict[str, Any]]:
    spec = pod_spec(workload)
    found: list[dict[str, Any]] = list(spec["containers"])
    return found + list(spec.get("initContainers") or []) if init else found


# The sidecar in front of every component's /metrics (templates/_kube_rbac_proxy.tpl).
SIDECAR = "kube-rbac-proxy"


def own_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """The workload's own long-running containers: without its kube-rbac-proxy sidecar."""
    return [c for c in pod_spec(workload)["containers"] if c["name"] != SIDECAR]


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def handler(rendered: Rendered) -> dict[str, Any]:
    return rendered.get("DaemonSet", "gpu-handler")
