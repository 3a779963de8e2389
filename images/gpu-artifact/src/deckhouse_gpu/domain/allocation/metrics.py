# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the allocation metrics count (DESIGN.md S1.2): devices of our driver allocated per
DeviceClass, node and mode, read from the claims' allocations and specs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

DRIVER = "gpu.deckhouse.io"
MIG_MARK = "-mig-"  # naming.mig_name: gpu-<address>-mig-<profile>-<start>


@dataclass(frozen=True)
class AllocatedGroup:
    device_class: str
    node: str
    mode: str  # Physical, MIG or Shared


def _classes(claim: Mapping[str, Any]) -> dict[str, str]:
    """Request name (``req`` or ``req/sub``) -> DeviceClass name."""
    found = {}
    for request in (((claim.get("spec") or {}).get("devices") or {}).get("requests")) or ():
        name = str(request.get("name"))
        if isinstance(request.get("exactly"), Mapping):
            found[name] = str(request["exactly"].get("deviceClassName"))
        for sub in request.get("firstAvailable") or ():
            found[f"{name}/{sub.get('name')}"] = str(sub.get("deviceClassName"))
    return found


def allocation_node(allocation: Mapping[str, Any]) -> str:
    """The node the allocation's node selector names; "" when it names none."""
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or ():
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return ""


def mode(result: Mapping[str, Any]) -> str:
    if result.get("shareID"):
        return "Shared"
    return "MIG" if MIG_MARK in str(result.get("device")) else "Physical"


def allocated_groups(claims: Iterable[Mapping[str, Any]]) -> Counter[AllocatedGroup]:
    counts: Counter[AllocatedGroup] = Counter()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or ()
        if not results:
            continue
        classes, node = _classes(claim), allocation_node(allocation)
        for result in results:
            if result.get("driver") == DRIVER and not result.get("adminAccess"):
                request = str(result.get("request"))
                counts[AllocatedGroup(classes.get(request, ""), node, mode(result))] += 1
    return counts


def seconds_to_allocate(claim: Mapping[str, Any], now: datetime) -> float | None:
    """From the claim's creation to ``now`` (when its allocation was seen); None if unknown."""
    created = (claim.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(created, str):
        return None
    try:
        start = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max((now - start).total_seconds(), 0.0)
