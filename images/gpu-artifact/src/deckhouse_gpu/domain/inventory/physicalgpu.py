# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU API (gpu.deckhouse.io/v1alpha1): status models shared by every component.

Who writes what (DESIGN.md D8): gpu-node-agent owns ``nodeInfo``, ``pciInfo`` and
``currentState.driverType``/``driverName``; gpu-controller owns the ``DriverReady`` condition;
gpu-handler owns ``capabilities``, ``currentState.nvidia``, ``HardwareHealthy`` and ``OtherOwner``
(domain/inventory/other_owner.py).
The CRD in ``crds/physicalgpu.yaml`` is kept in sync with these models by a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from deckhouse_gpu.k8s_semantics.apimachinery.codec import json_name

GROUP = "gpu.deckhouse.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "PhysicalGPU"
PLURAL = "physicalgpus"

LABEL_NODE = f"{GROUP}/node"
LABEL_VENDOR = f"{GROUP}/vendor"
LABEL_DEVICE = f"{GROUP}/device"

# Condition types and their owners (DESIGN.md D8).
DRIVER_READY = "DriverReady"  # gpu-controller
HARDWARE_HEALTHY = "HardwareHealthy"  # gpu-handler


class Vendor(StrEnum):
    NVIDIA = "Nvidia"
    AMD = "Amd"
    INTEL = "Intel"


class DriverType(StrEnum):
    NVIDIA = "Nvidia"
    VFIO = "VFIO"
    ROCM = "ROCm"
    NOUVEAU = "Nouveau"
    OTHER = "Other"


class MigMode(StrEnum):
    ENABLED = "Enabled"
    DISABLED = "Disabled"
    NOT_AVAILABLE = "NotAvailable"
    UNKNOWN = "Unknown"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class OSInfo:
    id: str | None = None
    version: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class NodeInfo:
    node_name: str | None = None
    os: OSInfo | None = None
    kernel_release: str | None = None
    bare_metal: bool | None = None


@dataclass(frozen=True)
class NamedID:
    id: str
    name: str | None = None


@dataclass(frozen=True)
class PCIClass:
    code: str  # base class and subclass, four hex digits ("0302")
    name: str | None = None


@dataclass(frozen=True)
class PCISubsystem:
    vendor_id: str = field(metadata=json_name("vendorID"))
    device_id: str = field(metadata=json_name("deviceID"))
    name: str | None = None


@dataclass(frozen=True)
class PCIInfo:
    address: str
    class_: PCIClass = field(metadata=json_name("class"))
    vendor: NamedID
    device: NamedID
    subsystem: PCISubsystem | None = None
    iommu_group: int | None = None
    numa_node: int | None = None
    pcie_root: str | None = None


@dataclass(frozen=True)
class MigPlacement:
    start: int
    size: int


@dataclass(frozen=True)
class MigProfile:
    profile_id: int = field(metadata=json_name("profileID"))
    name: str
    memory_mib: int = field(metadata=json_name("memoryMiB"))
    slice_count: int
    max_instances: int
    multiprocessors: int | None = None
    copy_engines: int | None = None
    decoders: int | None = None
    encoders: int | None = None
    jpeg_engines: int | None = None
    ofa_engines: int | None = None
    placements: list[MigPlacement] | None = None


@dataclass(frozen=True)
class MigCapabilities:
    total_slices: int
    profiles: list[MigProfile]


@dataclass(frozen=True)
class NvidiaCapabilities:
    compute_cap: str | None = None
    product_architecture: str | None = None
    board_part_number: str | None = None
    compute_types: list[str] | None = None
    power_limit_min_w: int | None = field(default=None, metadata=json_name("powerLimitMinW"))
    power_limit_max_w: int | None = field(default=None, metadata=json_name("powerLimitMaxW"))
    mig_supported: bool | None = None
    mig: MigCapabilities | None = None


@dataclass(frozen=True)
class Capabilities:
    product_name: str | None = None
    memory_mib: int | None = field(default=None, metadata=json_name("memoryMiB"))
    vendor: Vendor | None = None
    nvidia: NvidiaCapabilities | None = None


@dataclass(frozen=True)
class Condition:
    type: str
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: str
    observed_generation: int | None = None


@dataclass(frozen=True)
class NvidiaMigState:
    mode: MigMode
    pending_mode: MigMode | None = None  # set only while a mode change waits for a GPU reset


@dataclass(frozen=True)
class NvidiaState:
    gpu_uuid: str | None = field(default=None, metadata=json_name("gpuUUID"))
    driver_version: str | None = None
    cuda_version: str | None = None
    power_limit_current_w: int | None = field(default=None, metadata=json_name("powerLimitCurrentW"))
    power_limit_enforced_w: int | None = field(default=None, metadata=json_name("powerLimitEnforcedW"))
    mig: NvidiaMigState | None = None


@dataclass(frozen=True)
class CurrentState:
    driver_type: DriverType | None = None
    driver_name: str | None = None
    nvidia: NvidiaState | None = None


@dataclass(frozen=True)
class PhysicalGPUStatus:
    node_info: NodeInfo | None = None
    pci_info: PCIInfo | None = None
    capabilities: Capabilities | None = None
    conditions: list[Condition] | None = None
    current_state: CurrentState | None = None


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    priority: int = 0


# What `kubectl get pgpu` shows; the CRD's additionalPrinterColumns must say the same (tested).
PRINTER_COLUMNS: tuple[PrinterColumn, ...] = (
    PrinterColumn("Node", "string", ".status.nodeInfo.nodeName"),
    PrinterColumn("Model", "string", ".status.pciInfo.device.name"),
    PrinterColumn("Memory(MiB)", "integer", ".status.capabilities.memoryMiB"),
    PrinterColumn("MIG", "string", ".status.currentState.nvidia.mig.mode"),
    PrinterColumn("DriverReady", "string", '.status.conditions[?(@.type=="DriverReady")].status'),
    PrinterColumn("HardwareHealthy", "string", '.status.conditions[?(@.type=="HardwareHealthy")].status'),
    PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    PrinterColumn("Address", "string", ".status.pciInfo.address", priority=1),
    PrinterColumn("Driver", "string", ".status.currentState.driverType", priority=1),
    PrinterColumn("Product", "string", ".status.capabilities.productName", priority=1),
    PrinterColumn("UUID", "string", ".status.currentState.nvidia.gpuUUID", priority=1),
)
