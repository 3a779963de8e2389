#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Keeps the node labels that place gpu-handler, DCGM, dcgm-exporter (gpu.deckhouse.io/driver-ready)
and the driver validator (gpu.deckhouse.io/nvidia) on the GPU nodes, and takes them off when the
module is deleted; see lib/gpu_node_labels.py for the rules and for why labels, not node lists."""

from __future__ import annotations

from typing import Any

from deckhouse import hook
from lib.gpu_node_labels import (
    NODE_FILTER,
    PHYSICAL_GPU_FILTER,
    LabelPatch,
    cluster_nodes,
    label_patches,
    mig_capable_nodes,
    removal_patches,
)
from lib.settings import AUTO_UNDECIDED, mig_offers

MODULE = "gpu"
CONFIG = f"""
configVersion: v1
# beforeHelm: a change of managedNodes in the ModuleConfig runs the module, not the bindings below.
beforeHelm: 10
afterDeleteHelm: 10
kubernetes:
  - name: physical_gpus
    group: main
    queue: /modules/{MODULE}/gpu-node-labels
    apiVersion: gpu.deckhouse.io/v1alpha1
    kind: PhysicalGPU
    labelSelector:
      matchLabels:
        gpu.deckhouse.io/vendor: nvidia
    jqFilter: '{PHYSICAL_GPU_FILTER}'
    keepFullObjectsInMemory: false
  - name: nodes
    group: main
    queue: /modules/{MODULE}/gpu-node-labels
    apiVersion: v1
    kind: Node
    jqFilter: '{NODE_FILTER}'
    keepFullObjectsInMemory: false
"""


def _apply(ctx: Any, patches: list[LabelPatch]) -> None:
    for patch in patches:
        # A node deleted since the snapshot was taken needs no label.
        ctx.kubernetes.merge_patch(
            "Node", "", patch.node, patch.merge_patch(), apiVersion="v1", ignoreMissingObject=True
        )


def main(ctx: Any) -> None:
    nodes = ctx.snapshots.get("nodes", [])
    if ctx.binding_context.get("binding") == "afterDeleteHelm":
        _apply(ctx, removal_patches(nodes))
        return
    settings = ctx.values.get(MODULE) or {}
    gpus = ctx.snapshots.get("physical_gpus", [])
    _apply(ctx, label_patches(gpus, nodes, settings))
    # dra.migOffers Auto: decided here, where the nodes are seen, and written only when the
    # decision changes, so a node coming or going renders nothing (lib/settings.py, mig_offers).
    dra = settings.get("dra") or {}
    internal = settings.get("internal") or {}
    wanted = mig_offers(
        dra.get("migOffers", "Auto"),
        mig_capable_nodes(gpus, nodes, settings),
        cluster_nodes(nodes),
        ((ctx.values.get("global") or {}).get("discovery") or {}).get("kubernetesVersion"),
        internal.get("migOffers"),
    )
    # Before any decision derive_settings already gives AUTO_UNDECIDED: nothing to write for it.
    if internal.get("migOffers", AUTO_UNDECIDED) != wanted:
        settings.setdefault("internal", {})["migOffers"] = wanted
        ctx.values[MODULE] = settings


if __name__ == "__main__":
    hook.run(main, config=CONFIG)
