# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which claims gpu-dra-controller allocates: only those the kube-scheduler never will (DESIGN.md D1).

- Claims of a pod created with ``spec.nodeName`` already set. The scheduler allocates a pod's
  claims in PreBind, before it binds the pod; a pod that is bound while a claim of it is still
  unallocated never went through the scheduler, and nothing else would ever allocate that claim.
- Claims marked with the annotation ``gpu.deckhouse.io/allocate-on-node: <node>``, for users who
  allocate without a pod (reservations made ahead, tests).

Everything else (extended resources, claim templates of scheduled pods) stays the scheduler's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALLOCATE_ON_NODE = "gpu.deckhouse.io/allocate-on-node"
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"  # the scheduler's finalizer
MAX_RESERVED = 256


@dataclass(frozen=True)
class ClaimRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def allocated(claim: Mapping[str, Any]) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def pod_claims(pod: Mapping[str, Any]) -> tuple[list[ClaimRef], list[str]]:
    """The claims of a pod, and the pod's claim entries whose generated claim is not known yet."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    namespace = str(meta.get("namespace", ""))
    generated = {
        entry.get("name"): entry.get("resourceClaimName")
        for entry in status.get("resourceClaimStatuses") or ()
        if isinstance(entry, Mapping)
    }
    found, pending = [], []
    for entry in spec.get("resourceClaims") or ():
        if not isinstance(entry, Mapping):
            continue
        if entry.get("resourceClaimName"):
            found.append(ClaimRef(namespace, str(entry["resourceClaimName"])))
        elif entry.get("resourceClaimTemplateName"):
            name = generated.get(entry.get("name"))
            if name:
                found.append(ClaimRef(namespace, str(name)))
            else:
                pending.append(str(entry.get("name")))
    return found, pending


def bound_node(pod: Mapping[str, Any]) -> str | None:
    """The node of a pod that is bound and not finished; None otherwise."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def marked_node(claim: Mapping[str, Any]) -> str | None:
    node = ((claim.get("metadata") or {}).get("annotations") or {}).get(ALLOCATE_ON_NODE)
    return str(node) if node else None


def consumer(pod: Mapping[str, Any]) -> dict[str, str]:
    meta = pod.get("metadata") or {}
    return {"resource": "pods", "name": str(meta.get("name")), "uid": str(meta.get("uid"))}


def finalizer_patch(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """Adds the scheduler's finalizer, guarded by the claim's resourceVersion; None if present."""
    meta = claim.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if DELETE_PROTECTION in finalizers:
        return None
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "finalizers": [*finalizers, DELETE_PROTECTION],
        }
    }


def status_patch(
    claim: Mapping[str, Any], allocation: Mapping[str, Any], pod: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Sets the allocation (and reserves the claim for the pod), guarded by resourceVersion."""
    meta, status = claim.get("metadata") or {}, claim.get("status") or {}
    reserved = [dict(entry) for entry in status.get("reservedFor") or () if isinstance(entry, Mapping)]
    if pod is not None:
        mine = consumer(pod)
        if all(entry.get("uid") != mine["uid"] for entry in reserved) and len(reserved) < MAX_RESERVED:
            reserved.append(mine)
    body: dict[str, Any] = {"allocation": dict(allocation)}
    if reserved:
        body["reservedFor"] = reserved
    return {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": body}
