# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which nodes run the node runtime: pure logic of the gpu_node_labels hook.

The DaemonSets that run only on GPU nodes (gpu-handler, DCGM and dcgm-exporter, the driver
validator) select their nodes with a ``nodeSelector`` on two labels that this hook keeps on the
Nodes. It is deliberately not a list of node names rendered into the pod templates: such a list
changes the template whenever a GPU node comes or goes, which rolls every pod of the DaemonSet (every
DRA plugin of the cluster restarts because of one unrelated node), and a ``matchFields`` term on
``metadata.name`` accepts exactly one value, so a list of two nodes is rejected by the API server.

- ``VALIDATOR_LABEL`` marks a managed node with an NVIDIA PhysicalGPU, whatever its DriverReady:
  the validator's readiness is what sets DriverReady in the first place.
- ``HANDLER_LABEL`` marks a managed node with at least one NVIDIA PhysicalGPU whose DriverReady is
  ``True``.

A node is managed when it exists, is not opted out (the ``managedNodes.optOutLabel`` label, any
value) and carries every label of ``managedNodes.nodeSelector``. The hook owns both labels: it sets
them where they belong and removes them everywhere else (a label put on by hand is taken off), and
removes all of them when the module is deleted. Snapshot entries that are malformed (a deleted
object, a missing field, a value of the wrong type) are skipped, never fatal: one broken object
must not take the GPU stack off every node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_OPT_OUT_LABEL = "gpu.deckhouse.io/disabled"
VALIDATOR_LABEL = "gpu.deckhouse.io/nvidia"
HANDLER_LABEL = "gpu.deckhouse.io/driver-ready"
OWNED_LABELS = (VALIDATOR_LABEL, HANDLER_LABEL)
LABEL_VALUE = "true"

# What the hook's kubernetes bindings keep of each object (jq, run by shell-operator).
PHYSICAL_GPU_FILTER = (
    "{node: .status.nodeInfo.nodeName, "
    "migSupported: (.status.capabilities.nvidia.migSupported // false), "
    'driverReady: ([.status.conditions[]? | select(.type == "DriverReady") | .status][0] // "Unknown")}'
)
NODE_FILTER = "{name: .metadata.name, labels: (.metadata.labels // {})}"


@dataclass(frozen=True)
class LabelPatch:
    """A merge patch of one Node's labels: a value sets a label, None removes it."""

    node: str
    labels: dict[str, str | None]

    def merge_patch(self) -> dict[str, Any]:
        return {"metadata": {"labels": dict(self.labels)}}


def _results(snapshot: Iterable[Any]) -> list[Mapping[str, Any]]:
    found = []
    for entry in snapshot or ():
        result = entry.get("filterResult") if isinstance(entry, Mapping) else None
        if isinstance(result, Mapping):
            found.append(result)
    return found


def _nodes(snapshot: Iterable[Any]) -> dict[str, Mapping[str, Any]]:
    """Node name -> its labels, for every well-formed entry."""
    found: dict[str, Mapping[str, Any]] = {}
    for node in _results(snapshot):
        name, labels = node.get("name"), node.get("labels")
        if isinstance(name, str) and name:
            found[name] = labels if isinstance(labels, Mapping) else {}
    return found


def gpu_nodes(gpus: Iterable[Any]) -> set[str]:
    return {node for gpu in _results(gpus) if isinstance(node := gpu.get("node"), str) and node}


def ready_gpu_nodes(gpus: Iterable[Any]) -> set[str]:
    return {
        node
        for gpu in _results(gpus)
        if isinstance(node := gpu.get("node"), str) and node and gpu.get("driverReady") == "True"
    }


def mig_capable_nodes(gpus: Iterable[Any], nodes: Iterable[Any], settings: Mapping[str, Any]) -> int:
    """Managed nodes with a MIG-capable card: the nodes that may publish counters, which is what
    a 1.34-1.36 scheduler pays for on every Pod (dra.migOffers Auto, lib/settings.py)."""
    capable = {
        node
        for gpu in _results(gpus)
        if isinstance(node := gpu.get("node"), str) and node and gpu.get("migSupported") is True
    }
    return len(capable & _managed(_nodes(nodes), settings))


def cluster_nodes(nodes: Iterable[Any]) -> int:
    """Every Node: the scheduler tries each of them for a GPU Pod, CPU-only ones too."""
    return len(_nodes(nodes))


def _managed(by_name: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]) -> set[str]:
    managed = settings.get("managedNodes") or {}
    opt_out = managed.get("optOutLabel") or DEFAULT_OPT_OUT_LABEL
    selector = managed.get("nodeSelector") or {}
    return {
        name
        for name, labels in by_name.items()
        if opt_out not in labels and all(labels.get(key) == value for key, value in selector.items())
    }


def label_patches(gpus: Iterable[Any], nodes: Iterable[Any], settings: Mapping[str, Any]) -> list[LabelPatch]:
    """The patches that bring every node's owned labels to what they should be; none when they are.

    Only nodes whose labels differ are patched, so a steady cluster costs no API write.
    """
    gpus = list(gpus or ())
    by_name = _nodes(nodes)
    managed = _managed(by_name, settings)
    wanted = {
        VALIDATOR_LABEL: gpu_nodes(gpus) & managed,
        HANDLER_LABEL: ready_gpu_nodes(gpus) & managed,
    }
    patches = []
    for name, labels in sorted(by_name.items()):
        change: dict[str, str | None] = {}
        for label, members in wanted.items():
            if name in members and labels.get(label) != LABEL_VALUE:
                change[label] = LABEL_VALUE
            elif name not in members and label in labels:
                change[label] = None
        if change:
            patches.append(LabelPatch(name, change))
    return patches


def removal_patches(nodes: Iterable[Any]) -> list[LabelPatch]:
    """The patches that take the owned labels off every node (the module is being deleted)."""
    patches = []
    for name, labels in sorted(_nodes(nodes).items()):
        owned: dict[str, str | None] = {label: None for label in OWNED_LABELS if label in labels}
        if owned:
            patches.append(LabelPatch(name, owned))
    return patches


def labelled(nodes: Iterable[Any], label: str) -> set[str]:
    """The nodes that carry ``label`` with the hook's value now."""
    return {name for name, labels in _nodes(nodes).items() if labels.get(label) == LABEL_VALUE}
