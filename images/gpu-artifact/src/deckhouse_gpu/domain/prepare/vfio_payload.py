# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a container that runs a virtual machine gets for a card passed through (DESIGN.md D7,
docs/VFIO.md): its VFIO device nodes, and the QEMU hook payload.

The device nodes are VFIO's legacy container interface, the one libvirt and so KubeVirt's
virt-launcher open: ``/dev/vfio/vfio`` and ``/dev/vfio/<IOMMU group>``. Nothing of the nvidia
driver: the guest runs its own driver, and the host's libraries in the launcher would only be
loaded by nothing. KubeVirt finds which PCI device to attach in the device metadata file (KEP-5304,
``resource.kubernetes.io/pciBusID``, domain/prepare/container/device_metadata.py) and reads no environment
variable for a DRA device, so none is set.

The payload is one versioned JSON document per claim, for a QEMU (libvirt) hook or anything else
that wants to check or tune the passthrough: the claim, the Pod that reserved it, and for each card
its model and memory and every function moved to vfio-pci with its IOMMU group, original driver,
NUMA node and PCIe root. It is mounted read-only at ``/var/run/gpu.deckhouse.io/vfio/<claim>.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import LABEL_DEVICE
from deckhouse_gpu.domain.prepare.container.cdi_spec import DeviceNode, node_edit
from deckhouse_gpu.domain.prepare.container.device_metadata import MOUNT_OPTIONS
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import CardGroup, PciFunction, PodRef, to_bind

API_VERSION = "gpu.deckhouse.io/v1alpha1"
KIND = "VFIOPassthrough"
CONTAINER_DIR = "/var/run/gpu.deckhouse.io/vfio"
CONTROL_NODE = "/dev/vfio/vfio"


def group_node_path(group: int) -> str:
    return f"/dev/vfio/{group}"


def container_path(claim: Mapping[str, Any]) -> str:
    """Where the claim's payload is in the container: named after the claim, which is unique among
    the claims of the Pod's namespace, so a hook reads every file of the directory."""
    return f"{CONTAINER_DIR}/{(claim.get('metadata') or {}).get('name', '')}.json"


def _card(plan: DevicePlan, cards: Iterable[Mapping[str, Any]]) -> Mapping[str, Any]:
    for card in cards:
        if ((card.get("status") or {}).get("pciInfo") or {}).get("address") == plan.card:
            return card
    return {}


def _function(function: PciFunction, group: int) -> dict[str, Any]:
    return {
        "pciAddress": function.address,
        "class": function.class_code,
        "vendorID": function.vendor_id,
        "deviceID": function.device_id,
        "originalDriver": function.driver,
        "iommuGroup": group,
        "numaNode": function.numa_node,
        "pcieRoot": function.pcie_root,
    }


def _device(plan: DevicePlan, group: CardGroup, card: Mapping[str, Any]) -> dict[str, Any]:
    labels = (card.get("metadata") or {}).get("labels") or {}
    status = card.get("status") or {}
    pci = status.get("pciInfo") or {}
    caps = status.get("capabilities") or {}
    return {
        "name": plan.device,
        "request": plan.request,
        "pciAddress": plan.card,
        "iommuGroup": group.group,
        "model": labels.get(LABEL_DEVICE),
        "productName": caps.get("productName") or (pci.get("device") or {}).get("name"),
        "memoryMiB": caps.get("memoryMiB"),
        "functions": [_function(function, group.group) for function in to_bind(group)],
    }


def payload(
    claim: Mapping[str, Any],
    pod: PodRef | None,
    node: str,
    plans: Sequence[DevicePlan],
    groups: Mapping[str, CardGroup],
    cards: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """The document for the claim's VFIO devices (``plans`` with ``vfio``), their groups as checked."""
    meta = claim.get("metadata") or {}
    cards = list(cards)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "node": node,
        "claim": {
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        },
        "pod": None if pod is None else {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
        "devices": [_device(plan, groups[plan.card], _card(plan, cards)) for plan in plans if plan.vfio],
    }


def encode(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=False) + "\n").encode()


def device_edits(
    control: DeviceNode, group: DeviceNode, payload_host_path: str, payload_container_path: str
) -> dict[str, Any]:
    """A VFIO device's CDI edits: the container node, its group's node, the payload, read-only."""
    return {
        "deviceNodes": [node_edit(control), node_edit(group)],
        "mounts": [
            {
                "hostPath": payload_host_path,
                "containerPath": payload_container_path,
                "options": list(MOUNT_OPTIONS),
            }
        ],
    }
