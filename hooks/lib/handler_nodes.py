"""Which nodes run gpu-handler, DCGM and dcgm-exporter, and which the driver validator: pure logic
of the handler_nodes hook.

The validator runs on every managed node with an NVIDIA PhysicalGPU, whatever its DriverReady: its
readiness is what sets DriverReady in the first place.

A node qualifies when it exists, is not opted out (the ``managedNodes.optOutLabel`` label, any
value), carries every label of ``managedNodes.nodeSelector``, and has at least one PhysicalGPU
whose ``DriverReady`` condition is ``True``. Snapshot entries that are malformed (a deleted
object, a missing field, a value of the wrong type) are skipped, never fatal: one broken object
must not take the GPU stack off every node.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_OPT_OUT_LABEL = "gpu.deckhouse.io/disabled"

# What the hook's kubernetes bindings keep of each object (jq, run by shell-operator).
PHYSICAL_GPU_FILTER = (
    "{node: .status.nodeInfo.nodeName, "
    'driverReady: ([.status.conditions[]? | select(.type == "DriverReady") | .status][0] // "Unknown")}'
)
NODE_FILTER = "{name: .metadata.name, labels: (.metadata.labels // {})}"


def _results(snapshot: Iterable[Any]) -> list[Mapping[str, Any]]:
    found = []
    for entry in snapshot or ():
        result = entry.get("filterResult") if isinstance(entry, Mapping) else None
        if isinstance(result, Mapping):
            found.append(result)
    return found


def ready_gpu_nodes(gpus: Iterable[Any]) -> set[str]:
    return {
        node
        for gpu in _results(gpus)
        if isinstance(node := gpu.get("node"), str) and node and gpu.get("driverReady") == "True"
    }


def managed_nodes(nodes: Iterable[Any], settings: Mapping[str, Any]) -> set[str]:
    managed = settings.get("managedNodes") or {}
    opt_out = managed.get("optOutLabel") or DEFAULT_OPT_OUT_LABEL
    selector = managed.get("nodeSelector") or {}
    names = set()
    for node in _results(nodes):
        name, labels = node.get("name"), node.get("labels")
        if not isinstance(name, str) or not name:
            continue
        labels = labels if isinstance(labels, Mapping) else {}
        if opt_out in labels:
            continue
        if all(labels.get(key) == value for key, value in selector.items()):
            names.add(name)
    return names


def gpu_nodes(gpus: Iterable[Any]) -> set[str]:
    return {node for gpu in _results(gpus) if isinstance(node := gpu.get("node"), str) and node}


def validator_nodes(gpus: Iterable[Any], nodes: Iterable[Any], settings: Mapping[str, Any]) -> list[str]:
    return sorted(gpu_nodes(gpus) & managed_nodes(nodes, settings))


def handler_nodes(gpus: Iterable[Any], nodes: Iterable[Any], settings: Mapping[str, Any]) -> list[str]:
    return sorted(ready_gpu_nodes(gpus) & managed_nodes(nodes, settings))


def nodes_hash(names: list[str]) -> str:
    """Short and stable: the DaemonSets' pod template carries it, so they roll when it changes."""
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()[:16]
