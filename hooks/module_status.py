#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Reports the module's status as metrics (cards by readiness and health, GPU nodes without
gpu-handler, webhook certificate expiry); see lib/module_status.py."""

from __future__ import annotations

from typing import Any

from deckhouse import hook
from lib.gpu_node_labels import NODE_FILTER, VALIDATOR_LABEL
from lib.module_status import GROUP, PHYSICAL_GPU_FILTER, metrics

MODULE = "gpu"
CONFIG = f"""
configVersion: v1
kubernetes:
  - name: physical_gpus
    group: main
    queue: /modules/{MODULE}/module-status
    apiVersion: gpu.deckhouse.io/v1alpha1
    kind: PhysicalGPU
    jqFilter: '{PHYSICAL_GPU_FILTER}'
    keepFullObjectsInMemory: false
  - name: nodes
    group: main
    queue: /modules/{MODULE}/module-status
    apiVersion: v1
    kind: Node
    # Only the GPU nodes: the ones the gpu_node_labels hook labelled for the validator.
    labelSelector:
      matchExpressions:
        - {{key: "{VALIDATOR_LABEL}", operator: Exists}}
    jqFilter: '{NODE_FILTER}'
    keepFullObjectsInMemory: false
schedule:
  # The certificate lives in values, which no binding watches.
  - name: every_minute
    crontab: "* * * * *"
    group: main
    queue: /modules/{MODULE}/module-status
"""


def main(ctx: Any) -> None:
    internal = (ctx.values.get(MODULE) or {}).get("internal") or {}
    # Expired first: a run with no series at all must still clear the previous ones.
    ctx.metrics.expire(GROUP)
    snapshots = ctx.snapshots
    for series in metrics(snapshots.get("physical_gpus", []), snapshots.get("nodes", []), internal):
        ctx.metrics.collect(series)


if __name__ == "__main__":
    hook.run(main, config=CONFIG)
