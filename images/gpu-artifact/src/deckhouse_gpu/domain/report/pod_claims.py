# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The claims of a Pod, as the scheduler finds them (KUBERNETES-FACTS.md F2.2, F2.3).

``spec.resourceClaims`` names each claim directly (``resourceClaimName``) or through a template
(``resourceClaimTemplateName``), whose generated claim ``status.resourceClaimStatuses`` names once
the controller has made it. Until then the claim the template will give is its ``spec.spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALLOCATED, UNALLOCATED, NOT_CREATED, MISSING = "allocated", "unallocated", "not created", "missing"


@dataclass(frozen=True)
class PodClaim:
    entry: str  # the name in pod.spec.resourceClaims
    claim: str  # namespace/name of the ResourceClaim; the template's claim to be: namespace/<pod>-<entry>
    source: str  # "claim NAME" or "template NAME"
    state: str  # ALLOCATED, UNALLOCATED, NOT_CREATED (only the template exists), MISSING
    obj: Mapping[str, Any] | None  # the claim, or the one its template gives; None when MISSING
    problem: str | None = None

    @property
    def node_selector(self) -> Mapping[str, Any] | None:
        """Where an allocated claim is available: its allocation's node selector."""
        allocation = ((self.obj or {}).get("status") or {}).get("allocation") or {}
        found = allocation.get("nodeSelector")
        return found if isinstance(found, Mapping) else None


def pod_ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_claims(
    pod: Mapping[str, Any],
    claims: Mapping[str, Mapping[str, Any]],
    templates: Mapping[str, Mapping[str, Any]],
) -> list[PodClaim]:
    """``claims`` by namespace/name; ``templates`` of the Pod's namespace by name."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    generated = {
        entry.get("name"): entry.get("resourceClaimName")
        for entry in status.get("resourceClaimStatuses") or ()
        if isinstance(entry, Mapping)
    }
    found = []
    for entry in spec.get("resourceClaims") or ():
        if not isinstance(entry, Mapping):
            continue
        label = str(entry.get("name", ""))
        direct, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        claim_name = direct or generated.get(label)
        source = f"claim {direct}" if direct else f"template {template}"
        if claim_name:
            ref = f"{namespace}/{claim_name}"
            obj = claims.get(ref)
            if obj is None:
                problem = f"ResourceClaim {ref} does not exist"
                found.append(PodClaim(label, ref, source, MISSING, None, problem))
                continue
            allocated = bool((obj.get("status") or {}).get("allocation"))
            found.append(PodClaim(label, ref, source, ALLOCATED if allocated else UNALLOCATED, obj))
            continue
        ref = f"{namespace}/{name}-{label}"
        shown = templates.get(str(template))
        if not template or shown is None:
            problem = f"ResourceClaimTemplate {namespace}/{template} does not exist"
            found.append(PodClaim(label, ref, source, MISSING, None, problem))
            continue
        claim = {
            "metadata": {"namespace": namespace, "name": f"{name}-{label}"},
            "spec": (shown.get("spec") or {}).get("spec") or {},
        }
        found.append(PodClaim(label, ref, source, NOT_CREATED, claim))
    return found


def template_names(pod: Mapping[str, Any]) -> list[str]:
    """The templates of the Pod's claims that were not generated yet: those the caller must read."""
    generated = {
        entry.get("name")
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        if isinstance(entry, Mapping) and entry.get("resourceClaimName")
    }
    return sorted(
        str(entry["resourceClaimTemplateName"])
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ()
        if isinstance(entry, Mapping)
        and entry.get("resourceClaimTemplateName")
        and entry.get("name") not in generated
    )
