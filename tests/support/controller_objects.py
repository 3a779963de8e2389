# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Objects gpu-controller reads, shaped as the API server returns them: cards, validator pods, nodes."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube

NAMESPACE = "d8-gpu"
SELECTOR_LABELS = {"app": "nvidia-driver-validator"}


def card(name: str, node: str, vendor: str = "nvidia", model: str = "a30-pcie") -> dict[str, Any]:
    labels = {
        "gpu.deckhouse.io/node": node,
        "gpu.deckhouse.io/vendor": vendor,
        "gpu.deckhouse.io/device": model,
    }
    return {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "PhysicalGPU",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"nodeInfo": {"nodeName": node}},
    }


def ready_status() -> dict[str, Any]:
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "validator", "ready": True, "state": {"running": {}}}],
    }


def crashing_status(message: str = "driver not loaded") -> dict[str, Any]:
    return {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
        "initContainerStatuses": [
            {
                "name": "driver-validation",
                "ready": False,
                "restartCount": 7,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": message}},
            }
        ],
        "containerStatuses": [
            {"name": "validator", "ready": False, "state": {"waiting": {"reason": "PodInitializing"}}}
        ],
    }


def pod(name: str, node: str | None, status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(SELECTOR_LABELS), **meta},
        "spec": {"nodeName": node} if node else {},
    }
    if status is not None:
        obj["status"] = status
    return obj


def add_card(kube: MemoryKube, name: str, node: str, vendor: str = "nvidia") -> dict[str, Any]:
    """Created, then its status written, as gpu-node-agent does."""
    kube.create(PHYSICAL_GPUS, card(name, node, vendor))
    return kube.patch(PHYSICAL_GPUS, name, {"status": {"nodeInfo": {"nodeName": node}}}, subresource="status")


def add_pod(
    kube: MemoryKube, name: str, node: str | None, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    created = kube.create(PODS, pod(name, node))
    if status is None:
        return created
    return set_pod_status(kube, name, status)


def set_pod_status(kube: MemoryKube, name: str, status: dict[str, Any]) -> dict[str, Any]:
    return kube.patch(PODS, name, {"status": status}, subresource="status", namespace=NAMESPACE)


def add_node(kube: MemoryKube, name: str) -> dict[str, Any]:
    return kube.create(NODES, {"metadata": {"name": name}})


def driver_ready(kube: MemoryKube, name: str) -> dict[str, Any] | None:
    conditions = (kube.get(PHYSICAL_GPUS, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "DriverReady"), None)
