# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu explain`` on a cluster that is half migrated from the device plugin: what a
node's device plugins and other owners mean for a Pod asking for an extended resource.

The scheduler leaves an extended resource to DRA only on nodes whose allocatable of it is 0
(KUBERNETES-FACTS.md F5); where a device plugin has it allocatable, the Pod goes to the plugin there, and
what DRA could give on that node does not matter. A node whose cards another owner holds publishes
nothing of ours (DESIGN.md D16), which the node's verdict should say instead of "no slices".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deckhouse_gpu.domain.inventory.other_owner import node_owner, served_elsewhere
from deckhouse_gpu.domain.report.extended import ExtendedRequest
from deckhouse_gpu.domain.report.pending import NodeVerdict


def plugin_served(node: Mapping[str, Any] | None, requests: Iterable[ExtendedRequest]) -> list[str]:
    """The Pod's extended resources a device plugin serves on the node, as ``name (N allocatable)``."""
    found = []
    for request in requests:
        count = served_elsewhere(node, request.resource)
        if request.device_class is not None and count > 0:
            found.append(f"{request.resource} ({count} allocatable)")
    return found


def annotate(
    verdicts: Iterable[NodeVerdict], nodes: Mapping[str, Mapping[str, Any]], requests: list[ExtendedRequest]
) -> None:
    """Adds to each verdict the device plugin that serves the Pod there, or the other owner that
    keeps the node's cards out of DRA."""
    for verdict in verdicts:
        node = nodes.get(verdict.node)
        served = plugin_served(node, requests)
        if served:
            verdict.device_plugin = (
                f"a device plugin serves {', '.join(served)} here: the scheduler gives the Pod the "
                "plugin's devices on this node, not DRA's, if the plugin has them free"
            )
        owner = node_owner(node)
        if owner is not None and not verdict.fits:
            verdict.pools.append(
                f"the module offers none of this node's GPUs: {owner.reason} ({owner.message})"
            )
