# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A Deckhouse VM's GPU in the simulator (issue 31): a GPUClass becomes its DeviceClass, the
virtualization module's ResourceClaimTemplate and KubeVirt's launcher Pod get a card, and the Pod's
deletion gives it back.

What the cluster's other parts do is done here as they do it: the VM module builds the template
(request ``gpu-<index>``, ``deviceClassName`` = the GPUClass, the ``VfioDeviceConfig``), the API
server calls our webhook's validation on it, the resourceclaim controller makes the Pod's claim
from the template (``<pod>-<pod claim name>-<suffix>``, annotated with the pod-local name), and
gpu-dra-controller allocates it: the launcher Pod is created on its node (no scheduler runs here,
DESIGN.md D1). The kubelet's prepare and unprepare are the node's real PrepareService
(simulation.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.config.opaque_types import API_VERSION
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.prepare.container.device_metadata import POD_CLAIM_NAME_ANNOTATION
from deckhouse_gpu.ports.controller_resources import (
    DEVICE_CLASSES,
    GPU_CLASSES,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
)
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, KubeAPI, NotFound
from deckhouse_gpu.services.allocation.config_admission import review
from deckhouse_gpu.simulator.allocation import ALLOCATION_TIMEOUT, failures
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE

READY_TIMEOUT = 20.0
VFIO_KIND = "VfioDeviceConfig"
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
METADATA_DIR = f"var/lib/kubelet/plugins/{DRIVER}/dra-device-metadata"


def claim_request(index: int) -> str:
    """The VM module's name of its index-th GPU: the Pod's claim and the claim's request."""
    return f"gpu-{index}"


def claim_template(vm: str, gpu_class: str, index: int = 0) -> dict[str, Any]:
    """The ResourceClaimTemplate deckhouse/virtualization builds for a VM's GPU, field for field;
    its name ends in 8 characters of a hash of the VM's name (fixed here)."""
    request = claim_request(index)
    parameters = {"apiVersion": API_VERSION, "kind": VFIO_KIND}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"{vm}-{index}-5f1c9a2e", "namespace": CLAIM_NAMESPACE},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": request,
                            "exactly": {
                                "deviceClassName": gpu_class,
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ],
                    "config": [
                        {"requests": [request], "opaque": {"driver": DRIVER, "parameters": parameters}}
                    ],
                }
            }
        },
    }


def _ready(api: KubeAPI, name: str) -> dict[str, Any] | None:
    status = api.get(GPU_CLASSES, name).get("status") or {}
    return next((dict(c) for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)


def gpu_class(api: KubeAPI, args: dict[str, Any]) -> list[str]:
    """Creates the GPUClass and reports its Ready condition and the DeviceClass made for it."""
    name = str(args["name"])
    api.create(GPU_CLASSES, {"metadata": {"name": name}, "spec": dict(args["spec"])})
    deadline = time.monotonic() + READY_TIMEOUT
    while (condition := _ready(api, name)) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if condition is None:
        return [f"  GPUClass {name} has no Ready condition after {READY_TIMEOUT:.0f} s"]
    ready = f"Ready={condition['status']} ({condition.get('reason')})"
    lines = [f"  GPUClass {name}: {ready}: {condition.get('message')}"]
    try:
        device_class = api.get(DEVICE_CLASSES, name)
    except NotFound:
        return [*lines, f"  no DeviceClass {name}"]
    owner = (device_class["metadata"].get("ownerReferences") or [{}])[0]
    spec = device_class["spec"]
    lines.append(f"  DeviceClass {name} generated, owned by {owner.get('kind')} {owner.get('name')}:")
    for selector in spec.get("selectors") or []:
        expression = str(selector["cel"]["expression"]).replace("\n", "\n              ")
        lines.append(f"    selector: {expression}")
    for config in spec.get("config") or []:
        lines.append(f"    config: {json.dumps(config['opaque']['parameters'], separators=(',', ':'))}")
    if spec.get("extendedResourceName"):
        lines.append(f"    extendedResourceName: {spec['extendedResourceName']}")
    return lines


def _admission(template: dict[str, Any]) -> str:
    kind = {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaimTemplate"}
    answer = review({"uid": "sim", "operation": "CREATE", "kind": kind, "object": template})
    if answer["allowed"]:
        return "  gpu-dra-controller's webhook: allowed" + (
            f" (warnings: {answer['warnings']})" if answer.get("warnings") else ""
        )
    return f"  gpu-dra-controller's webhook: denied: {answer['status']['message']}"


def vm_pod(api: KubeAPI, node: str, args: dict[str, Any]) -> tuple[list[str], str | None]:
    """The VM module's template and the launcher Pod on ``node``, the Pod's claim made from the
    template and allocated by gpu-dra-controller: the lines to show and the claim's name (None
    when the template was refused)."""
    vm, pod = str(args["vm"]), str(args["pod"])
    template = claim_template(vm, str(args["gpuClass"]))
    spec = template["spec"]["spec"]["devices"]
    request = spec["requests"][0]
    lines = [
        f"  the VM module's ResourceClaimTemplate {CLAIM_NAMESPACE}/{template['metadata']['name']}:"
        f" request {request['name']}: exactly {request['exactly']['deviceClassName']}"
        f" ExactCount {request['exactly']['count']};"
        f" config for [{request['name']}]: {json.dumps(spec['config'][0]['opaque'], separators=(',', ':'))}"
    ]
    verdict = _admission(template)
    lines.append(verdict)
    if "denied" in verdict:
        return lines, None
    api.create(RESOURCE_CLAIM_TEMPLATES, template)
    pod_claim = request["name"]
    labels = {"kubevirt.io": "virt-launcher"}
    container = {"name": "compute", "image": "virt-launcher", "resources": {"claims": [{"name": pod_claim}]}}
    spec = {
        "nodeName": node,
        "resourceClaims": [{"name": pod_claim, "resourceClaimTemplateName": template["metadata"]["name"]}],
        "containers": [container],
    }
    created = api.create(
        PODS, {"metadata": {"name": pod, "namespace": CLAIM_NAMESPACE, "labels": labels}, "spec": spec}
    )
    # The resourceclaim controller's part: the claim of the template, owned by the Pod.
    claim = f"{pod}-{pod_claim}-x9q2w"
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod,
        "uid": created["metadata"]["uid"],
        "controller": True,
    }
    meta = {
        "name": claim,
        "namespace": CLAIM_NAMESPACE,
        "annotations": {POD_CLAIM_NAME_ANNOTATION: pod_claim},
        "ownerReferences": [owner],
    }
    api.create(RESOURCE_CLAIMS, {"metadata": meta, "spec": template["spec"]["spec"]})
    api.patch(
        PODS,
        pod,
        {"status": {"resourceClaimStatuses": [{"name": pod_claim, "resourceClaimName": claim}]}},
        subresource="status",
        namespace=CLAIM_NAMESPACE,
    )
    lines.append(f"  Pod {CLAIM_NAMESPACE}/{pod} on {node}; its claim {claim} made from the template")
    deadline = time.monotonic() + ALLOCATION_TIMEOUT
    while time.monotonic() < deadline:
        status = api.get(RESOURCE_CLAIMS, claim, namespace=CLAIM_NAMESPACE).get("status") or {}
        if allocation := status.get("allocation"):
            devices = ", ".join(r["device"] for r in allocation["devices"]["results"])
            sources = sorted({c.get("source", "") for c in allocation["devices"].get("config") or []})
            lines.append(
                f"  gpu-dra-controller allocated {claim}: {devices} (config from {', '.join(sources)})"
            )
            return lines, claim
        if failed := failures(api, claim):
            return [*lines, f"  gpu-dra-controller could not allocate {claim}: {failed[0]}"], claim
        time.sleep(0.01)
    return [*lines, f"  claim {claim} was not allocated within {ALLOCATION_TIMEOUT:.0f} s"], claim


def describe_metadata(root: Path, uid: str) -> list[str]:
    """The KEP-5304 device metadata files of the claim: what virt-launcher reads to find the card."""
    lines = []
    for path in sorted((root / METADATA_DIR / uid).glob("*/metadata.json")):
        document, _ = json.JSONDecoder().raw_decode(path.read_text())  # the newest version first
        for request in document.get("requests") or []:
            for device in request.get("devices") or []:
                bus_id = (device.get("attributes") or {}).get(PCI_BUS_ID, {}).get("string")
                lines.append(
                    f"  device metadata ({document['apiVersion']}) for {document.get('podClaimName')}"
                    f"/{request['name']}: {device['name']}, {PCI_BUS_ID}={bus_id}"
                )
    return lines


def delete_pod(api: KubeAPI, name: str) -> str:
    """The Pod goes; the resourceclaim controller deletes the claims it made for it."""
    pod = api.get(PODS, name, namespace=CLAIM_NAMESPACE)
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        api.delete(RESOURCE_CLAIMS, entry["resourceClaimName"], namespace=CLAIM_NAMESPACE)
    api.delete(PODS, name, namespace=CLAIM_NAMESPACE)
    return f"  Pod {CLAIM_NAMESPACE}/{name} and its claim deleted"
