# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How many nodes publish counters, and whether the cluster's kube-scheduler pays for it.

On kube-scheduler 1.34-1.36 every node's counter slices are gathered for every node the scheduler
tries, so each Pod asking for any device pays in proportion to the square of the number of nodes
that publish counters (docs/DRA.md, "Scale"; measured: ~4x a plain card per Pod at 10 such nodes,
~50x at 40, seconds per Pod at 200). 1.37 has the fix (upstream PR #138917). The threshold is the
one dra.migOffers Auto switches at (hooks/lib/settings.py, MIG_OFFERS_THRESHOLD).
"""

from __future__ import annotations

from dataclasses import dataclass

from deckhouse_gpu.domain.allocation.model import Inventory

THRESHOLD = 16
PAYING_VERSIONS = ("1.34", "1.35", "1.36")


@dataclass(frozen=True)
class SchedulerCost:
    counter_nodes: int  # nodes whose slices carry sharedCounters (they offer dynamic MIG)
    kubernetes: str
    warning: str | None


def scheduler_cost(inventory: Inventory, kubernetes: str) -> SchedulerCost:
    nodes = {node for node, slices in inventory.by_node.items() if any(s.has_counters for s in slices)}
    warning = None
    if kubernetes in PAYING_VERSIONS and len(nodes) > THRESHOLD:
        warning = (
            f"{len(nodes)} nodes publish counters (dynamic MIG), more than {THRESHOLD}: the "
            f"kube-scheduler of Kubernetes {kubernetes} pays for each of them on every GPU Pod "
            "(measured on 1.35: ~50x a plain card per Pod at 40 such nodes, seconds at 200). "
            "Offer dynamic MIG only where it is used: ModuleConfig dra.migOffers OptIn with the node "
            "label gpu.deckhouse.io/mig=true (Auto does it past 16), or dra.migProfiles; docs/DRA.md, 'Scale'"
        )
    return SchedulerCost(len(nodes), kubernetes, warning)
