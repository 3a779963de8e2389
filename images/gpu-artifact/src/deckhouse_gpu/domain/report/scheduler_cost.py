# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How many nodes publish counters, and whether the cluster's kube-scheduler pays for it.

On kube-scheduler 1.34-1.36, for every node it tries, the scheduler gathers the counter slices of
every node that publishes them and scans the cluster's slices, so each Pod asking for any device
pays about (nodes in the cluster) x (nodes publishing counters) (docs/DRA.md, "Scale"; measured:
~3x a plain card per Pod at 10 of 10 nodes, ~50x at 40 of 40, ~20x at 16 of 200, seconds at 200 of
200). 1.37 has the fix (upstream PR #138917). BUDGET is the one dra.migOffers Auto switches at
(hooks/lib/settings.py, MIG_OFFERS_BUDGET).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.k8s_semantics.resources.model import Inventory

# The hooks keep the same number (hooks/lib/settings.py; tests/cmd/test_kubectl_gpu_scheduler_cost.py
# holds them equal): they run without this package.
BUDGET = 16 * 16
PAYING_VERSIONS = ("1.34", "1.35", "1.36")


@dataclass(frozen=True)
class SchedulerCost:
    counter_nodes: int  # nodes whose slices carry sharedCounters (they offer dynamic MIG)
    nodes: int  # every node of the cluster: the scheduler tries each of them
    kubernetes: str
    warning: str | None


def scheduler_cost(inventory: Inventory, kubernetes: str, cluster_nodes: int) -> SchedulerCost:
    publishing = {node for node, slices in inventory.by_node.items() if any(s.has_counters for s in slices)}
    nodes = max(cluster_nodes, len(publishing))
    warning = None
    if kubernetes in PAYING_VERSIONS and len(publishing) * nodes > BUDGET:
        warning = (
            f"{len(publishing)} of the cluster's {nodes} nodes publish counters (dynamic MIG): the "
            f"kube-scheduler of Kubernetes {kubernetes} pays for each of them on every node it tries, "
            "for every GPU Pod (measured on 1.35: ~20x a plain card per Pod with 16 of 200 nodes, "
            "seconds with 200 of 200). Offer dynamic MIG only where it is used: ModuleConfig "
            "dra.migOffers OptIn (Auto does it past 16 x 16) with the node label gpu.deckhouse.io/mig=true, "
            "or dra.migProfiles; docs/DRA.md, 'Scale'"
        )
    return SchedulerCost(len(publishing), nodes, kubernetes, warning)


def broad_classes(selected: Mapping[str, int], inventory: Inventory) -> list[str]:
    """The DeviceClasses that accept every device this driver publishes, MIG placements included:
    for such a class every node publishes its whole layout, since offers follow the classes
    (DESIGN.md D19). ``selected``: class -> devices of the cluster its selectors accept."""
    ours = [d for s in inventory.slices if s.driver == DRIVER for d in s.devices]
    if not any(_is_mig(d.raw) for d in ours):
        return []
    return sorted(name for name, count in selected.items() if count >= len(ours))


def _is_mig(device: Mapping[str, Any]) -> bool:
    return ((device.get("attributes") or {}).get("deviceType") or {}).get("string") == "MIG"
