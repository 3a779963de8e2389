# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Builds a host root on disk with the layout the agent reads: sysfs PCI tree, DMI, os-release.

The tree mimics real sysfs: ``bus/pci/devices/<addr>`` are symlinks into ``devices/``, and
``driver`` and ``iommu_group`` are symlinks to the driver and group directories.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from deckhouse_gpu.simulator.host import driver_tree
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS, OTHER_DEVICES, PciModel, pci_ids_text

BARE_METAL_DMI = ("Supermicro", "SYS-420GP-TNR")
VM_DMI = ("QEMU", "Standard PC (Q35 + ICH9, 2009)")


class HostBuilder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sys = root / "sys"
        self.bus_devices = self.sys / "bus/pci/devices"
        self.bus_devices.mkdir(parents=True, exist_ok=True)
        (self.sys / "bus/pci/drivers").mkdir(parents=True, exist_ok=True)
        self.nvidia_driver = False
        self.card_minors: dict[str, int] = {}

    def device_dir(self, address: str) -> Path:
        return self.sys / "devices" / f"pci{address[:7]}" / address

    def add_function(
        self,
        address: str,
        model: PciModel,
        driver: str | None = None,
        iommu_group: int | None = None,
        numa_node: int = -1,
    ) -> Path:
        directory = self.device_dir(address)
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "class": f"0x{model.class_code}",
            "vendor": f"0x{model.vendor_id}",
            "device": f"0x{model.device_id}",
            "subsystem_vendor": f"0x{model.subsystem_vendor_id}",
            "subsystem_device": f"0x{model.subsystem_device_id}",
            "numa_node": str(numa_node),
            "driver_override": "(null)",  # as the kernel shows an unset override
        }
        for name, content in files.items():
            (directory / name).write_text(content + "\n")
        link = self.bus_devices / address
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(directory, self.bus_devices))
        self.bind_driver(address, driver)
        if iommu_group is not None:
            group = self.sys / "kernel/iommu_groups" / str(iommu_group)
            (group / "devices").mkdir(parents=True, exist_ok=True)
            self._relink(directory / "iommu_group", group)
            self._relink(group / "devices" / address, directory)  # as the kernel lists the members
        return directory

    def load_driver(self, name: str) -> HostBuilder:
        """A driver module loaded without a device yet (vfio-pci: also its container node)."""
        (self.sys / "bus/pci/drivers" / name).mkdir(parents=True, exist_ok=True)
        if name == "vfio-pci":
            driver_tree.device_node(self.root / "dev/vfio/vfio", *driver_tree.VFIO_CONTAINER)
        return self

    def add_gpu(
        self,
        model_key: str,
        address: str,
        driver: str | None = "nvidia",
        iommu_group: int | None = None,
        numa_node: int = -1,
    ) -> Path:
        path = self.add_function(address, GPU_MODELS[model_key], driver, iommu_group, numa_node)
        if self.nvidia_driver and address not in self.card_minors:
            # What the nvidia module creates for every card it drives: /dev/nvidiaN and /proc info.
            self.card_minors[address] = len(self.card_minors)
            driver_tree.add_card(self.root, address, self.card_minors[address])
        return path

    def install_nvidia_driver(self, boot_id: str = "6d7f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b") -> HostBuilder:
        """The NVIDIA driver installed on the host itself (driver root "/"): libraries, tools,
        control device nodes, and the boot ID the prepare checkpoint is keyed to."""
        self.nvidia_driver = True
        driver_tree.build_driver_root(self.root)
        driver_tree.add_control_nodes(self.root)
        driver_tree.write(self.root / "proc/sys/kernel/random/boot_id", boot_id + "\n")
        return self

    def add_other_devices(self, count: int, first_bus: int = 0x80) -> None:
        """Bridges, NICs, NVMe, a BMC VGA and NVIDIA non-GPU functions, as real nodes have."""
        for index in range(count):
            bus, function = divmod(index, 8)
            address = f"0000:{first_bus + bus // 32:02x}:{bus % 32:02x}.{function}"
            model = OTHER_DEVICES[index % len(OTHER_DEVICES)]
            self.add_function(address, model, driver=None)

    def bind_driver(self, address: str, driver: str | None) -> None:
        link = self.device_dir(address) / "driver"
        if driver is None:
            link.unlink(missing_ok=True)
            return
        target = self.sys / "bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        self._relink(link, target)

    def remove_device(self, address: str) -> None:
        group = self.device_dir(address) / "iommu_group"
        if group.is_symlink():
            (group.resolve() / "devices" / address).unlink(missing_ok=True)
        (self.bus_devices / address).unlink(missing_ok=True)
        shutil.rmtree(self.device_dir(address), ignore_errors=True)

    def write_device_file(self, address: str, name: str, content: str) -> None:
        (self.device_dir(address) / name).write_text(content)

    def set_dmi(self, sys_vendor: str | None, product_name: str | None) -> None:
        dmi = self.sys / "class/dmi/id"
        dmi.mkdir(parents=True, exist_ok=True)
        for name, value in (("sys_vendor", sys_vendor), ("product_name", product_name)):
            if value is None:
                (dmi / name).unlink(missing_ok=True)
            else:
                (dmi / name).write_text(value + "\n")

    def set_os_release(self, os_id: str, version: str, pretty_name: str) -> None:
        etc = self.root / "etc"
        etc.mkdir(parents=True, exist_ok=True)
        name = pretty_name.split(maxsplit=1)[0]
        text = f'NAME="{name}"\nID={os_id}\nVERSION_ID="{version}"\nPRETTY_NAME="{pretty_name}"\n'
        (etc / "os-release").write_text(text)

    def set_kernel_release(self, release: str) -> None:
        kernel = self.root / "proc/sys/kernel"
        kernel.mkdir(parents=True, exist_ok=True)
        (kernel / "osrelease").write_text(release + "\n")

    def install_pci_ids(self, text: str | None = None, location: str = "usr/share/misc/pci.ids") -> None:
        path = self.root / location
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(pci_ids_text() if text is None else text)

    def standard_node(self, bare_metal: bool = True) -> HostBuilder:
        """OS, kernel, DMI and pci.ids of a typical Ubuntu GPU node."""
        self.set_os_release("ubuntu", "22.04", "Ubuntu 22.04.4 LTS")
        self.set_kernel_release("5.15.0-105-generic")
        self.set_dmi(*(BARE_METAL_DMI if bare_metal else VM_DMI))
        self.install_pci_ids()
        return self

    @staticmethod
    def _relink(link: Path, target: Path) -> None:
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(target, link.parent))
