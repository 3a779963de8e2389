# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The AllocationResult of a claim, shaped exactly as the scheduler writes it (KUBERNETES-FACTS.md F4.4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deckhouse_gpu.k8s_semantics.resources.claims import Claim
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics

if TYPE_CHECKING:
    from deckhouse_gpu.k8s_semantics.allocator.search_pass import Placed


def _node_selector(placed: Sequence[Placed], node: str) -> dict[str, Any] | None:
    pinned = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    expressions: list[Any] = []
    fields: list[Any] = []
    everywhere = True
    for item in placed:
        selection = item.device.selection
        if selection.node_name or item.device.binds_to_node:
            return pinned
        if selection.all_nodes:
            continue
        everywhere = False
        terms = (selection.node_selector or {}).get("nodeSelectorTerms") or []
        if len(terms) != 1:
            return pinned  # several alternatives cannot be merged into one term
        for requirement in terms[0].get("matchExpressions") or ():
            if requirement not in expressions:
                expressions.append(requirement)
        for requirement in terms[0].get("matchFields") or ():
            if requirement not in fields:
                fields.append(requirement)
    if everywhere:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _config(claim: Claim, placed: Sequence[Placed]) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = []
    classes: dict[str, list[str]] = {}
    seen: dict[str, Any] = {}
    for item in placed:
        device_class = item.alternative.device_class
        names = classes.setdefault(device_class.name, [])
        seen[device_class.name] = device_class
        if item.alternative.name not in names:
            names.append(item.alternative.name)
    for class_name, requests in classes.items():
        for entry in seen[class_name].config:
            configs.append({"source": "FromClass", "requests": list(requests), **_opaque(entry)})
    allocated = {item.alternative.name for item in placed} | {item.alternative.request for item in placed}
    for entry in claim.config:
        requests = [str(r) for r in entry.get("requests") or ()]
        if requests and not any(r in allocated for r in requests):
            continue
        found: dict[str, Any] = {"source": "FromClaim", **_opaque(entry)}
        if requests:
            found["requests"] = requests
        configs.append(found)
    return configs


def _opaque(entry: Any) -> dict[str, Any]:
    return {"opaque": entry["opaque"]} if isinstance(entry, dict) and "opaque" in entry else {}


def allocation_result(
    claim: Claim, placed: Sequence[Placed], node: str, semantics: Semantics
) -> dict[str, Any]:
    results = []
    for item in placed:
        result: dict[str, Any] = {
            "request": item.alternative.name,
            "driver": item.device.driver,
            "pool": item.device.pool,
            "device": item.device.name,
        }
        if item.alternative.admin_access:
            result["adminAccess"] = True
        if item.alternative.tolerations and semantics.result_tolerations:
            result["tolerations"] = [t.raw() for t in item.alternative.tolerations]
        if item.share_id is not None:
            result["shareID"] = item.share_id
            result["consumedCapacity"] = {name: str(amount) for name, amount in (item.consumed or {}).items()}
        results.append(result)
    allocation: dict[str, Any] = {"devices": {"results": results}}
    configs = _config(claim, placed)
    if configs:
        allocation["devices"]["config"] = configs
    selector = _node_selector(placed, node)
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation
