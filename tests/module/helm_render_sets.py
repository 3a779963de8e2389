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
