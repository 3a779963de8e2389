# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Device metadata for containers (Kubernetes KEP-5304; docs/PREPARE.md "Device metadata for
containers"): which card or MIG instance a container got, in a file it reads without the API
server.

The protocol (Kubernetes 1.36 alpha, 1.37 beta; no feature gate, the driver writes everything):

- One file per claim and request, seen in the container at
  ``/var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json``,
  or ``.../resourceclaimtemplates/<pod claim name>/<request>/...`` for a claim generated from a
  ResourceClaimTemplate: the pod-local name (``pod.spec.resourceClaims[].name``), which the
  resourceclaim controller writes into the claim's ``resource.kubernetes.io/pod-claim-name``
  annotation. ``<request>`` is the request without a subrequest (``gpu`` for ``gpu/large``).
- The file is a stream of ``DeviceMetadata`` objects, the same content once per API version, newest
  first; a reader takes the first version it knows and skips the others.
- ``metadata`` names the claim (name, namespace, uid) with ``generation`` 1 (an update would have
  to raise it; a prepared claim's file never changes); ``podClaimName`` as above; ``requests`` holds
  this request (its full name, subrequest included) with one entry per device of this driver:
  driver, pool, name and the attributes in ResourceSlice form.
- The container sees it read-only, through a CDI bind mount (``["ro", "bind"]``).

The attributes are exactly those published in the ResourceSlice for the device
(domain/prepare/container/published_attributes.py), so KubeVirt's virt-launcher finds the Physical card's
``resource.kubernetes.io/pciBusID``. The protocol lets a driver add attributes of its own (they are
the driver's to choose); a MIG device gets ``migUUID``, the UUID of the instance prepare created.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.prepare.container.published_attributes import published_attributes
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan

CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
CLAIMS_DIR = "resourceclaims"
TEMPLATES_DIR = "resourceclaimtemplates"
FILE_SUFFIX = "-metadata.json"
KIND = "DeviceMetadata"
# Newest first: KubeVirt v1.9 and the 1.36 reader know v1alpha1 only and skip v1beta1 (1.37).
API_VERSIONS = ("metadata.resource.k8s.io/v1beta1", "metadata.resource.k8s.io/v1alpha1")
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
MOUNT_OPTIONS = ("ro", "bind")
MIG_UUID_ATTRIBUTE = "migUUID"
GENERATION = 1


def base_request(request: str) -> str:
    """The request without its subrequest: what the kubelet matches containers by."""
    return request.split("/", 1)[0]


def pod_claim_name(claim: Mapping[str, Any]) -> str | None:
    """The pod-local name of a claim generated from a template; None for a claim made directly."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(POD_CLAIM_NAME_ANNOTATION)
    return name if isinstance(name, str) and name else None


def container_path(claim: Mapping[str, Any], request: str) -> str:
    """Where a container sees the file of ``request`` of ``claim``."""
    template_name = pod_claim_name(claim)
    if template_name is not None:
        directory = f"{TEMPLATES_DIR}/{template_name}"
    else:
        directory = f"{CLAIMS_DIR}/{(claim.get('metadata') or {}).get('name', '')}"
    return f"{CONTAINER_DIR}/{directory}/{base_request(request)}/{DRIVER}{FILE_SUFFIX}"


def _card_of(plan: DevicePlan, cards: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for card in cards:
        if ((card.get("status") or {}).get("pciInfo") or {}).get("address") == plan.card:
            return card
    return None


def device_entry(
    plan: DevicePlan, cards: Iterable[Mapping[str, Any]], mig: Iterable[MigRecord] = ()
) -> dict[str, Any]:
    """One device of a request: driver, pool, name and its attributes. A card whose status no longer
    describes it (cannot happen for a card the plan found, short of a broken object) gets none."""
    entry: dict[str, Any] = {"driver": DRIVER, "pool": plan.pool, "name": plan.device}
    card = _card_of(plan, cards)
    attributes = dict(published_attributes(card, plan.device) or {}) if card is not None else {}
    if plan.kind == "MIG":
        record = next(
            (r for r in mig if (r.card, r.placement_start) == (plan.card, plan.placement_start)), None
        )
        if record is not None:
            attributes[MIG_UUID_ATTRIBUTE] = {"string": record.uuid}
    if attributes:
        entry["attributes"] = {key: attributes[key] for key in sorted(attributes)}
    return entry


def by_request(plans: Sequence[DevicePlan]) -> dict[str, list[DevicePlan]]:
    """The plans grouped by request without subrequest, in allocation order: one file each."""
    grouped: dict[str, list[DevicePlan]] = defaultdict(list)
    for plan in plans:
        grouped[base_request(plan.request)].append(plan)
    return dict(grouped)


def document(
    claim: Mapping[str, Any],
    plans: Sequence[DevicePlan],
    cards: Iterable[Mapping[str, Any]],
    mig: Iterable[MigRecord],
    api_version: str,
) -> dict[str, Any]:
    """The ``DeviceMetadata`` object of one request's file (``plans``: the devices of that request)."""
    meta = claim.get("metadata") or {}
    cards, mig = list(cards), list(mig)
    requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for plan in plans:
        requests[plan.request].append(device_entry(plan, cards, mig))
    found: dict[str, Any] = {
        "kind": KIND,
        "apiVersion": api_version,
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "generation": GENERATION,
        },
    }
    if (template_name := pod_claim_name(claim)) is not None:
        found["podClaimName"] = template_name
    found["requests"] = [{"name": name, "devices": devices} for name, devices in requests.items()]
    return found


def encode(objects: Iterable[Mapping[str, Any]]) -> bytes:
    """A JSON stream: each object indented, on lines of its own, one after the other."""
    return b"".join((json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode() for obj in objects)


def request_files(
    claim: Mapping[str, Any],
    plans: Sequence[DevicePlan],
    cards: Iterable[Mapping[str, Any]],
    mig: Iterable[MigRecord] = (),
) -> dict[str, bytes]:
    """Request (without subrequest) -> the content of its metadata file."""
    cards, mig = list(cards), list(mig)
    return {
        request: encode(document(claim, group, cards, mig, version) for version in API_VERSIONS)
        for request, group in by_request(plans).items()
    }


def mount_edits(
    claim: Mapping[str, Any], plans: Sequence[DevicePlan], host_path: Callable[[str], str]
) -> dict[str, dict[str, Any]]:
    """Device name -> the CDI edits that bind its request's file into the container, read-only.

    Every device of a request carries the mount: the kubelet gives a container all the CDI ids of
    the requests it uses, and CDI keeps one mount per container path, so a request of two devices
    still mounts its file once. ``host_path``: request -> the file's path as the host sees it."""
    edits: dict[str, dict[str, Any]] = {}
    for request, group in by_request(plans).items():
        mount = {
            "hostPath": host_path(request),
            "containerPath": container_path(claim, request),
            "options": list(MOUNT_OPTIONS),
        }
        for plan in group:
            mounts = edits.setdefault(plan.device, {"mounts": []})["mounts"]
            if mount not in mounts:  # two shares of one card in a request: one device name
                mounts.append(dict(mount))
    return edits
