# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Node selection of slices and devices with core NodeSelector semantics (node affinity).

Terms are ORed, requirements inside a term ANDed; an empty term matches nothing; matchFields
knows only ``metadata.name``, as the scheduler's node affinity does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.k8s_semantics.resources.model import NodeSelection


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def _requirement(requirement: Any, values_of: Mapping[str, str]) -> bool:
    if not isinstance(requirement, Mapping):
        return False
    key, operator = requirement.get("key"), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or ()]
    present = key in values_of
    value = values_of.get(str(key))
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            actual, bound = int(str(value)), int(values[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def _term(term: Any, node: Node) -> bool:
    if not isinstance(term, Mapping):
        return False
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(_requirement(r, node.labels) for r in expressions) and all(
        _requirement(r, {"metadata.name": node.name}) for r in fields
    )


def selector_matches(selector: Mapping[str, Any], node: Node) -> bool:
    return any(_term(term, node) for term in selector.get("nodeSelectorTerms") or ())


def selection_matches(selection: NodeSelection, node: Node) -> bool:
    if selection.node_name:
        return selection.node_name == node.name
    if selection.all_nodes:
        return True
    if selection.node_selector is not None:
        return selector_matches(selection.node_selector, node)
    return False  # none set: a future extension the scheduler ignores
