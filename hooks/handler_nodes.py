#!/usr/bin/env python3
"""Fills internal.handlerNodes (and its hash) with the nodes where gpu-handler, DCGM and
dcgm-exporter may run, and internal.validatorNodes with those of the driver validator; see
lib/handler_nodes.py for the rules."""

from __future__ import annotations

from typing import Any

from deckhouse import hook
from lib.handler_nodes import NODE_FILTER, PHYSICAL_GPU_FILTER, handler_nodes, nodes_hash, validator_nodes

MODULE = "gpu"
CONFIG = f"""
configVersion: v1
kubernetes:
  - name: physical_gpus
    group: main
    queue: /modules/{MODULE}/handler-nodes
    apiVersion: gpu.deckhouse.io/v1alpha1
    kind: PhysicalGPU
    labelSelector:
      matchLabels:
        gpu.deckhouse.io/vendor: nvidia
    jqFilter: '{PHYSICAL_GPU_FILTER}'
    keepFullObjectsInMemory: false
  - name: nodes
    group: main
    queue: /modules/{MODULE}/handler-nodes
    apiVersion: v1
    kind: Node
    jqFilter: '{NODE_FILTER}'
    keepFullObjectsInMemory: false
"""


def main(ctx: Any) -> None:
    settings = ctx.values.get(MODULE) or {}
    gpus, nodes = ctx.snapshots.get("physical_gpus", []), ctx.snapshots.get("nodes", [])
    names = handler_nodes(gpus, nodes, settings)
    internal = settings.setdefault("internal", {})
    internal["handlerNodes"] = names
    internal["handlerNodesHash"] = nodes_hash(names)
    internal["validatorNodes"] = validator_nodes(gpus, nodes, settings)
    ctx.values[MODULE] = settings


if __name__ == "__main__":
    hook.run(main, config=CONFIG)
