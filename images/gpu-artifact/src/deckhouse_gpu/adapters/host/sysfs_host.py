# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Reads PCI devices, DMI, os-release and pci.ids from a host root (``/`` or the host as mounted)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from deckhouse_gpu.domain.inventory.host_facts import HostFacts
from deckhouse_gpu.domain.inventory.pci import (
    SUPPORTED_GPU_VENDORS,
    DeviceReadError,
    PciDevice,
    is_gpu,
    is_pci_address,
    parse_class_code,
    parse_hex_id,
    pcie_root,
)
from deckhouse_gpu.domain.inventory.pciids import PciIds, parse_pci_ids
from deckhouse_gpu.ports.host import HostUnreadable, PciScan

log = logging.getLogger(__name__)

PCI_IDS_LOCATIONS = ("usr/share/hwdata/pci.ids", "usr/share/misc/pci.ids", "usr/share/pci.ids")
_MAX_SMALL_FILE = 4096


def _read_small(path: Path) -> str:
    # os.open/os.read instead of open(): a scan reads hundreds of tiny files, and the buffered
    # text-file machinery costs more than the read itself.
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(descriptor, _MAX_SMALL_FILE).decode("ascii", errors="replace")
    finally:
        os.close(descriptor)


def _read_optional(path: Path) -> str | None:
    try:
        return _read_small(path)
    except OSError:
        return None


def _link_name(path: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


class SysfsHost:
    """The real host (or a simulated tree with the same layout) under ``root``."""

    def __init__(self, root: Path | str = "/") -> None:
        self.root = Path(root)
        self.devices_dir = self.root / "sys/bus/pci/devices"
        self._ids: PciIds | None = None
        self._ids_key: tuple[str, float, int] | None = None

    def scan_pci(self) -> PciScan:
        try:
            entries = sorted(os.listdir(self.devices_dir))
        except OSError as error:
            raise HostUnreadable(f"cannot list {self.devices_dir}: {error.strerror or error}") from error
        gpus: list[PciDevice] = []
        errors: list[DeviceReadError] = []
        for address in entries:
            try:
                device = self._read_if_gpu(address)
            except (OSError, ValueError) as error:
                errors.append(DeviceReadError(address, _describe(error)))
                continue
            if device is not None:
                gpus.append(device)
        return PciScan(gpus, errors, scanned=len(entries))

    def _read_if_gpu(self, address: str) -> PciDevice | None:
        if not is_pci_address(address):
            raise ValueError("the directory name is not a PCI address")
        base = self.devices_dir / address
        # Cheapest rejection first: most PCI functions are bridges, NICs and the like.
        class_code = _parsed(base / "class", parse_class_code)
        if not class_code.startswith("03"):
            return None
        vendor_id = _parsed(base / "vendor", parse_hex_id)
        if vendor_id not in SUPPORTED_GPU_VENDORS or not is_gpu(class_code, vendor_id):
            return None
        return PciDevice(
            address=address,
            class_code=class_code,
            vendor_id=vendor_id,
            device_id=_parsed(base / "device", parse_hex_id),
            subsystem_vendor_id=_optional_id(base / "subsystem_vendor"),
            subsystem_device_id=_optional_id(base / "subsystem_device"),
            driver=_link_name(base / "driver"),
            iommu_group=_optional_int(_link_name(base / "iommu_group")),
            numa_node=_numa_node(base / "numa_node"),
            pcie_root=pcie_root(os.path.realpath(base)),
        )

    def facts(self) -> HostFacts:
        dmi = self.root / "sys/class/dmi/id"
        os_release = _read_optional(self.root / "etc/os-release")
        if os_release is None:
            os_release = _read_optional(self.root / "usr/lib/os-release")
        return HostFacts(
            os_release=os_release,
            kernel_release=_read_optional(self.root / "proc/sys/kernel/osrelease"),
            dmi_sys_vendor=_stripped(_read_optional(dmi / "sys_vendor")),
            dmi_product_name=_stripped(_read_optional(dmi / "product_name")),
        )

    def pci_ids(self) -> PciIds | None:
        """Parsed once and kept until the file changes: parsing costs far more than a scan."""
        for relative in PCI_IDS_LOCATIONS:
            path = self.root / relative
            try:
                stat = path.stat()
            except OSError:
                continue
            key = (str(path), stat.st_mtime, stat.st_size)
            if key != self._ids_key:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError as error:
                    log.warning("pci.ids unreadable", extra={"path": str(path), "error": str(error)})
                    continue
                self._ids = parse_pci_ids(text, SUPPORTED_GPU_VENDORS)
                self._ids_key = key
                if self._ids.skipped_lines:
                    log.warning(
                        "pci.ids has malformed lines; their names are left out",
                        extra={"path": str(path), "skipped": self._ids.skipped_lines},
                    )
            return self._ids
        return None


def _parsed(path: Path, parse: Callable[[str], str]) -> str:
    try:
        return parse(_read_small(path))
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


def _describe(error: OSError | ValueError) -> str:
    if isinstance(error, OSError):
        name = Path(error.filename).name if error.filename else "file"
        return f"cannot read {name}: {error.strerror or error}"
    return str(error)


def _optional_id(path: Path) -> str | None:
    text = _read_optional(path)
    if text is None:
        return None
    try:
        return parse_hex_id(text)
    except ValueError:
        return None


def _optional_int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _numa_node(path: Path) -> int | None:
    value = _optional_int(_stripped(_read_optional(path)))
    return value if value is not None and value >= 0 else None  # -1 means "no NUMA affinity"


def _stripped(text: str | None) -> str | None:
    if text is None:
        return None
    return text.strip() or None
