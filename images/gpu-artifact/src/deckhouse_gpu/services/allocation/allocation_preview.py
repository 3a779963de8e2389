# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``gpu-dra-controller allocate``: what the allocator would do with given objects, as data.

No API is touched: slices, classes, claims and already-allocated claims come from files. With a
node, the claims are placed there or the reasons are given; without one, nodes are tried in name
order and the first that takes all claims wins, with the reasons of every node tried before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deckhouse_gpu.domain.allocation.explain import explain
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import ClaimError, parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state

Object = Mapping[str, Any]


def preview(
    slices: Sequence[Object],
    classes: Sequence[Object],
    claims: Sequence[Object],
    allocated: Sequence[Object],
    semantics: Semantics,
    node: str | None = None,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    report: dict[str, Any] = {"kubernetesVersion": semantics.version, "strict": semantics.strict}
    inventory = build_inventory(slices)
    state = allocated_state(allocated, semantics.consumable)
    problems = [*inventory.problems, *state.problems]
    if problems:
        report["inputProblems"] = problems
    try:
        parsed_classes = parse_classes(classes)
        parsed = [parse_claim(claim, parsed_classes, semantics) for claim in claims]
    except ClaimError as error:
        report["error"] = str(error)
        return report
    allocator = Allocator(inventory, semantics, CelMatcher(consumable_capacity=semantics.consumable))
    labels = node_labels or {}
    candidates = [node] if node else inventory.node_names()
    if not candidates:
        report["error"] = "no node to try: no ResourceSlice names a node, and --node is not given"
        return report
    tried: list[dict[str, Any]] = []
    for name in candidates:
        target = Node(name, dict(labels.get(name, {})))
        outcome = allocator.allocate(parsed, target, state)
        if outcome.allocations is not None:
            report["node"] = name
            report["claims"] = [
                {"name": claim.ref, "allocation": allocation}
                for claim, allocation in zip(parsed, outcome.allocations, strict=True)
            ]
            break
        entry: dict[str, Any] = {"node": name}
        if outcome.error:
            entry["error"] = outcome.error
        else:
            entry["reasons"] = explain(allocator, parsed, target, state)
        tried.append(entry)
    if tried:
        report["unallocated" if "node" not in report else "nodesTriedBefore"] = tried
    return report
