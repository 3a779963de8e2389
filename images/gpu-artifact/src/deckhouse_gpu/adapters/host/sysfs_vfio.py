# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The VfioHost port on sysfs: PCI functions, IOMMU groups and driver binding under a host root.

Binding uses the kernel's own interface, in the order libvirt's managed mode uses it: write
``vfio-pci`` to the function's ``driver_override`` (so that only vfio-pci may take it), unbind it
from its driver, then ask the PCI core to probe it (``/sys/bus/pci/drivers_probe``). Giving it back
clears the override, unbinds it from vfio-pci and binds the original driver by name. Every write
goes through ``_kernel``: the simulated host (simulator/host/sim_vfio.py) plays the kernel's part
there, so the same sequence runs on it.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

from deckhouse_gpu.domain.inventory.pci import is_pci_address, parse_class_code, parse_hex_id, pcie_root
from deckhouse_gpu.domain.prepare.container.cdi_spec import DeviceNode
from deckhouse_gpu.domain.prepare.vfio import VFIO_DRIVER, PciFunction
from deckhouse_gpu.ports.vfio import VfioError

log = logging.getLogger(__name__)

_HINTS = {
    errno.EACCES: "gpu-handler must run privileged, with /sys writable",
    errno.EPERM: "gpu-handler must run privileged, with /sys writable",
    errno.EROFS: "/sys is mounted read-only in gpu-handler's container: it must run privileged",
    errno.ENODEV: "the driver does not take the function",
    errno.EBUSY: "the function is in use: stop what uses it",
}


def _read(path: Path) -> str:
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(descriptor, 4096).decode("ascii", errors="replace").strip()
    finally:
        os.close(descriptor)


def _link_name(path: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


class SysfsVfio:
    """Implements VfioHost for the host under ``root`` (``/`` on a node: the handler runs privileged)."""

    def __init__(self, root: Path | str = "/") -> None:
        self.root = Path(root)
        self.bus = self.root / "sys/bus/pci"
        self.devices = self.bus / "devices"

    def vfio_available(self) -> bool:
        return (self.bus / "drivers" / VFIO_DRIVER).is_dir()

    def iommu_group(self, address: str) -> int | None:
        name = _link_name(self._device(address) / "iommu_group")
        return int(name) if name is not None and name.isdigit() else None

    def group_addresses(self, group: int) -> tuple[str, ...]:
        directory = self.root / "sys/kernel/iommu_groups" / str(group) / "devices"
        try:
            return tuple(sorted(name for name in os.listdir(directory) if is_pci_address(name)))
        except OSError as error:
            raise VfioError(
                f"cannot list IOMMU group {group} ({directory}): {error.strerror or error}"
            ) from error

    def function(self, address: str) -> PciFunction:
        base = self._device(address)
        try:
            numa = int(_read(base / "numa_node")) if (base / "numa_node").exists() else -1
            return PciFunction(
                address=address,
                class_code=parse_class_code(_read(base / "class")),
                vendor_id=parse_hex_id(_read(base / "vendor")),
                device_id=parse_hex_id(_read(base / "device")),
                driver=_link_name(base / "driver"),
                numa_node=numa if numa >= 0 else None,
                pcie_root=pcie_root(os.path.realpath(base)),
            )
        except (OSError, ValueError) as error:
            raise VfioError(f"cannot read PCI function {address} under {base}: {error}") from error

    def sriov_vfs(self, address: str) -> int:
        path = self._device(address) / "sriov_numvfs"
        try:
            return int(_read(path)) if path.exists() else 0
        except (OSError, ValueError) as error:
            raise VfioError(f"cannot read {path}: {error}") from error

    def bind_vfio(self, address: str) -> None:
        base = self._device(address)
        self._kernel(base / "driver_override", VFIO_DRIVER)
        if _link_name(base / "driver") is not None:
            self._kernel(base / "driver" / "unbind", address)
        self._kernel(self.bus / "drivers_probe", address)
        bound = _link_name(base / "driver")
        if bound != VFIO_DRIVER:
            raise VfioError(
                f"{address} is bound to {bound or 'no driver'} after the probe, not to vfio-pci: "
                "check the kernel log (dmesg) for vfio-pci's reason"
            )
        log.info("bound to vfio-pci", extra={"function": address})

    def restore(self, address: str, driver: str | None) -> None:
        base = self._device(address)
        if not base.exists():
            raise VfioError(f"PCI function {address} is gone from {self.devices}: it cannot be given back")
        if self._override(base) != "":  # set (or unreadable): an empty write clears it
            self._kernel(base / "driver_override", "\n")
        current = _link_name(base / "driver")
        if current == driver:
            return
        if current is not None:
            self._kernel(base / "driver" / "unbind", address)
        if driver is not None:
            target = self.bus / "drivers" / driver
            if not target.is_dir():
                raise VfioError(
                    f"cannot give {address} back to {driver}: the driver is not loaded (no {target}); "
                    f"load it (modprobe), then the kubelet's retry gives the function back"
                )
            self._kernel(target / "bind", address)
        bound = _link_name(base / "driver")
        if bound != driver:
            raise VfioError(
                f"{address} is bound to {bound or 'no driver'}, not back to {driver or 'no driver'}"
            )
        log.info("given back to its driver", extra={"function": address, "driver": driver})

    def device_node(self, path: str) -> DeviceNode:
        try:
            info = os.stat(self.root / path.lstrip("/"))
        except OSError:
            return DeviceNode(path)  # the runtime looks it up on the host when the container starts
        if stat.S_ISCHR(info.st_mode):
            return DeviceNode(path, os.major(info.st_rdev), os.minor(info.st_rdev))
        return DeviceNode(path)

    @staticmethod
    def _override(base: Path) -> str | None:
        """The function's driver_override, "" when unset (the kernel shows "(null)"); None when
        unreadable."""
        try:
            text = _read(base / "driver_override")
        except OSError:
            return None
        return "" if text == "(null)" else text

    def _device(self, address: str) -> Path:
        if not is_pci_address(address):
            raise VfioError(f"{address!r} is not a PCI address")
        return self.devices / address

    def _kernel(self, path: Path, text: str) -> None:
        """One write to a sysfs attribute; the kernel acts on it before the write returns."""
        try:
            self._apply(path, text)
        except OSError as error:
            hint = _HINTS.get(error.errno or 0, "see the kernel log (dmesg)")
            raise VfioError(
                f"cannot write {text.strip()!r} to {path}: {error.strerror or error}; {hint}"
            ) from error

    def _apply(self, path: Path, text: str) -> None:
        descriptor = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(descriptor, text.encode())
        finally:
            os.close(descriptor)
