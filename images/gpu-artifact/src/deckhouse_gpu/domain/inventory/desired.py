# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-node-agent wants the API to hold for its node: the PhysicalGPUs and the fields it owns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.domain import naming
from deckhouse_gpu.domain.inventory.known_gpus import known_gpu_name
from deckhouse_gpu.domain.inventory.pci import KNOWN_VENDORS, PciDevice, driver_type
from deckhouse_gpu.domain.inventory.pciids import PciIds
from deckhouse_gpu.domain.inventory.physicalgpu import (
    API_VERSION,
    KIND,
    LABEL_DEVICE,
    LABEL_NODE,
    LABEL_VENDOR,
    NamedID,
    NodeInfo,
    PCIClass,
    PCIInfo,
    PCISubsystem,
)
from deckhouse_gpu.k8s_semantics.apimachinery.codec import encode
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import create_patch

# The parts of status.currentState that belong to the agent; the rest is gpu-handler's.
AGENT_CURRENT_STATE_KEYS = ("driverType", "driverName")


@dataclass(frozen=True)
class DesiredGPU:
    name: str
    address: str
    labels: dict[str, str]
    status: dict[str, Any]  # only the agent's fields, in API JSON form

    def manifest(self, owner: dict[str, Any] | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "labels": dict(self.labels)}
        if owner is not None:
            metadata["ownerReferences"] = [owner]
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": metadata,
            "spec": {},
            "status": self.status,
        }


def node_label(node_name: str) -> str:
    return naming.label_value(node_name)


def node_selector(node_name: str) -> str:
    return f"{LABEL_NODE}={node_label(node_name)}"


def describe_gpu(node_name: str, device: PciDevice, ids: PciIds | None, node: NodeInfo) -> DesiredGPU:
    vendor = KNOWN_VENDORS.get(device.vendor_id)
    device_name = (ids.device_name(device.vendor_id, device.device_id) if ids else None) or known_gpu_name(
        device.vendor_id, device.device_id
    )
    subsystem = None
    if device.subsystem_vendor_id and device.subsystem_device_id:
        sub_name = None
        if ids is not None:
            sub_name = ids.subsystem_name(
                device.vendor_id, device.device_id, device.subsystem_vendor_id, device.subsystem_device_id
            )
        subsystem = PCISubsystem(device.subsystem_vendor_id, device.subsystem_device_id, sub_name)
    pci = PCIInfo(
        address=device.address,
        class_=PCIClass(device.class_code[:4], ids.class_name(device.class_code) if ids else None),
        vendor=NamedID(device.vendor_id, ids.vendor_name(device.vendor_id) if ids else None),
        device=NamedID(device.device_id, device_name),
        subsystem=subsystem,
        iommu_group=device.iommu_group,
        numa_node=device.numa_node,
        pcie_root=device.pcie_root,
    )
    current_state: dict[str, Any] = {}
    kind = driver_type(device.driver)
    if kind is not None:
        current_state = {"driverType": kind.value, "driverName": device.driver}
    labels = {
        LABEL_NODE: node_label(node_name),
        LABEL_VENDOR: vendor.label if vendor else device.vendor_id,
        LABEL_DEVICE: naming.model_slug(device_name, device.vendor_id, device.device_id),
    }
    status = {"nodeInfo": encode(node), "pciInfo": encode(pci), "currentState": current_state}
    return DesiredGPU(naming.physical_gpu_name(node_name, device.address), device.address, labels, status)


def agent_view(status: dict[str, Any] | None) -> dict[str, Any]:
    """The agent-owned part of a stored status, shaped like ``DesiredGPU.status``."""
    status = status or {}
    current = status.get("currentState") or {}
    view: dict[str, Any] = {"currentState": {k: current[k] for k in AGENT_CURRENT_STATE_KEYS if k in current}}
    for key in ("nodeInfo", "pciInfo"):
        if key in status:
            view[key] = status[key]
    return view


@dataclass(frozen=True)
class Change:
    """A merge patch for the metadata and one for the status; either may be empty."""

    metadata: dict[str, Any]
    status: dict[str, Any]

    @property
    def empty(self) -> bool:
        return not self.metadata and not self.status


def change_for(desired: DesiredGPU, stored: dict[str, Any], owner: dict[str, Any] | None = None) -> Change:
    """Labels that differ, the Node owner if it is missing, and the status fields that differ."""
    stored_meta = stored.get("metadata", {})
    stored_labels = stored_meta.get("labels") or {}
    metadata: dict[str, Any] = {}
    labels = {key: value for key, value in desired.labels.items() if stored_labels.get(key) != value}
    if labels:
        metadata["labels"] = labels
    owners = stored_meta.get("ownerReferences") or []
    if owner is not None and not any(ref.get("uid") == owner["uid"] for ref in owners):
        others = [ref for ref in owners if ref.get("kind") != "Node"]
        metadata["ownerReferences"] = [*others, owner]
    return Change(metadata, create_patch(agent_view(stored.get("status")), desired.status))


@dataclass(frozen=True)
class Removal:
    name: str
    uid: str
    address: str | None
    reason: str


@dataclass
class SyncPlan:
    create: list[DesiredGPU] = field(default_factory=list)
    update: list[tuple[DesiredGPU, dict[str, Any]]] = field(default_factory=list)
    delete: list[Removal] = field(default_factory=list)
    # Objects whose card was missing from this scan but not yet often enough to delete them.
    suspected_gone: dict[str, int] = field(default_factory=dict)
