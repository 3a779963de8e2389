# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What ``kubectl gpu`` needs of the main request path: extended resources backed by DeviceClasses
(KEP-5004), and the GPUClass a DeviceClass was generated from.

A Pod may ask for ``gpu.deckhouse.io/a30: 2`` in a container's resources instead of naming a
claim. The scheduler maps the name to the DeviceClass whose ``spec.extendedResourceName`` it is
(or, for ``deviceclass.resource.kubernetes.io/<class>``, to that class), and only once it has
picked a node does it create the claim, one per Pod, with a request per container and resource.
Until then the Pod has nothing in ``spec.resourceClaims``; ``extended_claim`` builds the claim the
scheduler would make, so the explain machinery can place it as it places any other.

A DeviceClass made by the module's GPUClass controller is owned by the GPUClass of the same name
(``metadata.ownerReferences``); ``gpu_class_of`` reads the owner, so the reports name the class the
administrator wrote without depending on the controller's code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.report.pod_claims import ALLOCATED, MISSING, NOT_CREATED, UNALLOCATED, PodClaim

Object = Mapping[str, Any]
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"  # KEP-5004: every class has this name too
GPU_CLASS_KIND = "GPUClass"
GPU_CLASS_GROUP = "gpu.deckhouse.io"
OUR_DOMAIN = "gpu.deckhouse.io/"  # extended resources of ours that no class backs are worth a word
ENTRY = "extended resources"  # how the Pod's extended-resource claim is named in the reports


def gpu_class_of(device_class: Object) -> str | None:
    """The GPUClass that owns the DeviceClass (its ownerReference of kind GPUClass), or None."""
    for owner in (device_class.get("metadata") or {}).get("ownerReferences") or ():
        if not isinstance(owner, Mapping) or owner.get("kind") != GPU_CLASS_KIND:
            continue
        if str(owner.get("apiVersion", "")).split("/")[0] == GPU_CLASS_GROUP:
            return str(owner.get("name", "")) or None
    return None


def gpu_classes(device_classes: Iterable[Object]) -> dict[str, str]:
    """DeviceClass name -> the GPUClass that owns it, for the owned ones."""
    found = {}
    for item in device_classes:
        owner = gpu_class_of(item)
        if owner is not None:
            found[str((item.get("metadata") or {}).get("name", ""))] = owner
    return found


def resource_classes(device_classes: Iterable[Object]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that backs it: ``spec.extendedResourceName`` and
    the implicit ``deviceclass.resource.kubernetes.io/<class>`` of every class."""
    found: dict[str, str] = {}
    for item in device_classes:
        name = str((item.get("metadata") or {}).get("name", ""))
        found[IMPLICIT_PREFIX + name] = name
        explicit = (item.get("spec") or {}).get("extendedResourceName")
        if isinstance(explicit, str) and explicit:
            # Two classes with one name: the scheduler picks by its own rules; any one explains.
            found.setdefault(explicit, name)
    return found


@dataclass(frozen=True)
class ExtendedRequest:
    container: str
    resource: str  # gpu.deckhouse.io/a30
    device_class: str | None  # None: no DeviceClass backs it
    count: int
    request: str  # the request's name in the claim the scheduler makes: container-0-request-0


def _count(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def extended_requests(pod: Object, by_resource: Mapping[str, str]) -> list[ExtendedRequest]:
    """The Pod's extended resources backed by a DeviceClass, and those of ours no class backs.

    Init containers run one after the other, so the scheduler asks for the most any of them needs
    rather than their sum; ordinary containers are what GPUs are asked for in, and are read here."""
    found = []
    for index, container in enumerate((pod.get("spec") or {}).get("containers") or ()):
        if not isinstance(container, Mapping):
            continue
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        position = 0
        for resource in sorted(asked):
            device_class = by_resource.get(resource)
            if device_class is None and not resource.startswith((OUR_DOMAIN, IMPLICIT_PREFIX)):
                continue  # a device plugin's, or the node's own: not ours to explain
            count = _count(asked[resource])
            if count is None or count <= 0:
                continue
            name = f"container-{index}-request-{position}"
            found.append(ExtendedRequest(str(container.get("name", "")), resource, device_class, count, name))
            position += 1 if device_class is not None else 0
    return found


def extended_claim(
    pod: Object, requests: Iterable[ExtendedRequest], claims: Mapping[str, Object]
) -> PodClaim | None:
    """The claim of the Pod's extended resources: the one the scheduler made
    (``status.extendedResourceClaimStatus``), or the one it would make; None when none is asked."""
    backed = [r for r in requests if r.device_class is not None]
    if not backed:
        return None
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    source = ", ".join(f"{r.resource}: {r.count}" for r in backed)
    made = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if made:
        ref = f"{namespace}/{made}"
        obj = claims.get(ref)
        if obj is None:
            return PodClaim(ENTRY, ref, source, MISSING, None, f"ResourceClaim {ref} does not exist")
        allocated = bool((obj.get("status") or {}).get("allocation"))
        return PodClaim(ENTRY, ref, source, ALLOCATED if allocated else UNALLOCATED, obj)
    spec_requests = [
        {
            "name": r.request,
            "exactly": {"deviceClassName": r.device_class, "allocationMode": "ExactCount", "count": r.count},
        }
        for r in backed
    ]
    claim = {
        "metadata": {"namespace": namespace, "name": f"{name}-extended-resources"},
        "spec": {"devices": {"requests": spec_requests}},
    }
    return PodClaim(ENTRY, f"{namespace}/{name}-extended-resources", source, NOT_CREATED, claim)


def claim_classes(claim: Object | None) -> list[str]:
    """The DeviceClasses the claim's requests name (``exactly`` or each ``firstAvailable``), in order."""
    found: list[str] = []
    requests = (((claim or {}).get("spec") or {}).get("devices") or {}).get("requests") or ()
    for request in requests:
        if not isinstance(request, Mapping):
            continue
        options = [request.get("exactly") or {}, *(request.get("firstAvailable") or ())]
        for option in options:
            name = option.get("deviceClassName") if isinstance(option, Mapping) else None
            if isinstance(name, str) and name and name not in found:
                found.append(name)
    return found


def class_label(device_class: str, owners: Mapping[str, str]) -> str:
    """The class as the reports name it: with the GPUClass it was generated from, when one owns it."""
    owner = owners.get(device_class)
    if owner is None:
        return device_class
    return f"{device_class} (GPUClass)" if owner == device_class else f"{device_class} (GPUClass {owner})"
