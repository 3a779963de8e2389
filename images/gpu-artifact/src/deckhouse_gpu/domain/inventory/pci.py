# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""PCI facts the inventory is built from: addresses, ids, class codes and which devices are GPUs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from deckhouse_gpu.domain.inventory.physicalgpu import DriverType, Vendor

_ADDRESS = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$")
_HEX_ID = re.compile(r"^(?:0x)?([0-9a-fA-F]{1,4})$")
_HEX_CLASS = re.compile(r"^(?:0x)?([0-9a-fA-F]{6})$")


@dataclass(frozen=True)
class VendorInfo:
    label: str  # value of the gpu.deckhouse.io/vendor label
    vendor: Vendor


# Every vendor the module can name. Only SUPPORTED_GPU_VENDORS are inventoried: adding AMD or
# Intel is a change of that one set once their handler exists.
KNOWN_VENDORS: dict[str, VendorInfo] = {
    "10de": VendorInfo("nvidia", Vendor.NVIDIA),
    "1002": VendorInfo("amd", Vendor.AMD),
    "8086": VendorInfo("intel", Vendor.INTEL),
}
SUPPORTED_GPU_VENDORS: frozenset[str] = frozenset({"10de"})

# PCI base class 0x03 (display controller): 0x00 VGA-compatible, 0x02 3D controller.
# Data-center GPUs are 3D controllers; workstation cards (and some A-series) are VGA.
GPU_CLASS_PREFIXES: frozenset[str] = frozenset({"0300", "0302"})

DRIVER_TYPES: dict[str, DriverType] = {
    "nvidia": DriverType.NVIDIA,
    "vfio-pci": DriverType.VFIO,
    "amdgpu": DriverType.ROCM,
    "nouveau": DriverType.NOUVEAU,
}


def is_pci_address(text: str) -> bool:
    return _ADDRESS.match(text) is not None


def parse_hex_id(text: str) -> str:
    """A sysfs id file (``0x10de\\n``) as four lowercase hex digits; ValueError if it is garbage."""
    match = _HEX_ID.match(text.strip())
    if match is None:
        raise ValueError(f"not a 16-bit hex id: {text.strip()[:40]!r}")
    return match.group(1).lower().zfill(4)


def parse_class_code(text: str) -> str:
    """A sysfs ``class`` file (``0x030200\\n``) as six lowercase hex digits."""
    match = _HEX_CLASS.match(text.strip())
    if match is None:
        raise ValueError(f"not a 24-bit PCI class code: {text.strip()[:40]!r}")
    return match.group(1).lower()


def is_gpu(class_code: str, vendor_id: str) -> bool:
    return class_code[:4] in GPU_CLASS_PREFIXES and vendor_id in SUPPORTED_GPU_VENDORS


def driver_type(driver: str | None) -> DriverType | None:
    """What the bound kernel driver means for the card; None when nothing is bound."""
    if driver is None:
        return None
    return DRIVER_TYPES.get(driver, DriverType.OTHER)


@dataclass(frozen=True)
class PciDevice:
    """One GPU as read from sysfs."""

    address: str
    class_code: str  # six hex digits: base class, subclass, programming interface
    vendor_id: str
    device_id: str
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    driver: str | None = None
    iommu_group: int | None = None
    numa_node: int | None = None
    pcie_root: str | None = None  # "pci0000:16": the root complex, for topology-aligned allocation


def pcie_root(sysfs_path: str) -> str | None:
    """The root complex of a device from its resolved sysfs path (``/sys/devices/pci0000:16/...``)."""
    for part in sysfs_path.split("/"):
        if part.startswith("pci") and len(part) == 10 and ":" in part:
            return part
    return None


@dataclass(frozen=True)
class DeviceReadError:
    """A device whose sysfs files could not be read or made no sense; it is skipped, not deleted."""

    address: str
    message: str
