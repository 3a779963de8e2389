# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO on a simulated host tree: the real sysfs adapter, with the kernel's part played on disk.

``SysfsVfio`` writes ``driver_override``, ``driver/unbind``, ``drivers_probe`` and
``drivers/<name>/bind`` exactly as on a node; here each write does what the kernel would: the
``driver`` link moves, an unbound nvidia card leaves the driver's /proc tree and NVML, a card bound
to vfio-pci gets its /dev/vfio/<group> node, and the uevents the kernel sends (``unbind``,
``bind``) reach ``on_event``, so gpu-node-agent sees the new driver on its own. A missing driver
directory or an unwritable ``driver_override`` fails as on a node. ``SimGpuProcesses`` answers the
NVML side from a ``SimulatedNVML``.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from deckhouse_gpu.adapters.host.sysfs_vfio import SysfsVfio
from deckhouse_gpu.domain.prepare.vfio import NVIDIA_DRIVER, VFIO_DRIVER
from deckhouse_gpu.ports.nvml import NVMLError
from deckhouse_gpu.ports.vfio import VfioError
from deckhouse_gpu.simulator.host import driver_tree
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML

PARKED = "var/lib/gpu-sim/nvidia-unbound"  # the driver's /proc entry of a card it lost, for its return
# The driver each kind of function probes to without an override (PCI class prefix, vendor).
NATIVE = {("03", "10de"): NVIDIA_DRIVER, ("0403", ""): "snd_hda_intel", ("0c03", ""): "xhci_hcd"}

Event = Callable[[str, str], None]


class SimulatedVfio(SysfsVfio):
    def __init__(
        self, root: Path | str, nvml: SimulatedNVML | None = None, on_event: Event | None = None
    ) -> None:
        super().__init__(root)
        self.nvml = nvml
        self.on_event = on_event
        self.read_only: set[str] = set()  # functions whose attributes refuse writes (a read-only /sys)

    def _apply(self, path: Path, text: str) -> None:
        name, address = path.name, text.strip()
        function = path.parent.name if name == "driver_override" else address
        if function in self.read_only:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        if name == "driver_override":
            super()._apply(path, text)  # a plain file here: it fails where the node's would
            path.write_text(text.strip() or "(null)")  # and reads back as the kernel's does
        elif name == "unbind":
            self._unbind(address)
        elif name == "bind":
            self._bind(address, path.parent.name)
        elif name == "drivers_probe":
            self._probe(address)
        else:
            super()._apply(path, text)

    def _probe(self, address: str) -> None:
        base = self.devices / address
        driver = self._override(base) or self._native(address)
        if driver and (self.bus / "drivers" / driver).is_dir() and not (base / "driver").exists():
            self._bind(address, driver)

    def _native(self, address: str) -> str | None:
        function = self.function(address)
        for (prefix, vendor), driver in NATIVE.items():
            if function.class_code.startswith(prefix) and vendor in ("", function.vendor_id):
                return driver
        return None

    def _unbind(self, address: str) -> None:
        link = self.devices / address / "driver"
        if not link.is_symlink():
            raise OSError(errno.ENODEV, "no driver is bound", str(link))
        driver = Path(link.readlink()).name
        link.unlink()
        if driver == NVIDIA_DRIVER:
            self._leave_nvidia(address)
        elif driver == VFIO_DRIVER:
            group = self.iommu_group(address)
            if group is not None and not any(self._on_vfio(a) for a in self.group_addresses(group)):
                (self.root / f"dev/vfio/{group}").unlink(missing_ok=True)
        self._event("unbind", address)

    def _bind(self, address: str, driver: str) -> None:
        target = self.bus / "drivers" / driver
        if not target.is_dir():
            raise OSError(errno.ENOENT, "no such driver", str(target / "bind"))
        link = self.devices / address / "driver"
        if link.is_symlink():
            raise OSError(errno.EBUSY, "the function is bound already", str(target / "bind"))
        link.symlink_to(os.path.relpath(target, link.parent.resolve()))  # as sysfs links it
        if driver == NVIDIA_DRIVER:
            self._join_nvidia(address)
        elif driver == VFIO_DRIVER:
            group = self.iommu_group(address)
            driver_tree.device_node(self.root / "dev/vfio/vfio", *driver_tree.VFIO_CONTAINER)
            if group is not None:
                driver_tree.device_node(self.root / f"dev/vfio/{group}", driver_tree.VFIO_GROUP_MAJOR, group)
        self._event("bind", address)

    def _on_vfio(self, address: str) -> bool:
        link = self.devices / address / "driver"
        return link.is_symlink() and Path(link.readlink()).name == VFIO_DRIVER

    def _leave_nvidia(self, address: str) -> None:
        entry = self.root / "proc/driver/nvidia/gpus" / address
        if entry.exists():
            parked = self.root / PARKED / address
            shutil.rmtree(parked, ignore_errors=True)
            parked.parent.mkdir(parents=True, exist_ok=True)
            entry.rename(parked)
        if self.nvml is not None:
            self.nvml.remove_card(address)

    def _join_nvidia(self, address: str) -> None:
        parked = self.root / PARKED / address
        if parked.exists():
            entry = self.root / "proc/driver/nvidia/gpus" / address
            entry.parent.mkdir(parents=True, exist_ok=True)
            parked.rename(entry)
        model = self._model(address)
        if self.nvml is not None and model is not None:
            self.nvml.add_card(address, model)

    def _model(self, address: str) -> str | None:
        base = self.devices / address
        ids = tuple((base / name).read_text().strip().removeprefix("0x") for name in ("vendor", "device"))
        return next((key for key, m in GPU_MODELS.items() if (m.vendor_id, m.device_id) == ids), None)

    def _event(self, action: str, address: str) -> None:
        if self.on_event is not None:
            self.on_event(action, address)


class SimGpuProcesses:
    """Implements GpuProcesses over a SimulatedNVML: what NVML shows is what runs."""

    def __init__(self, nvml: SimulatedNVML) -> None:
        self.nvml = nvml

    def processes(self, card: str) -> tuple[int, ...]:
        try:
            return self.nvml.processes(card)
        except NVMLError as error:
            raise VfioError(f"card {card}: NVML cannot list its processes: {error}") from error

    def visible(self, card: str) -> bool:
        try:
            return card in self.nvml.device_addresses()
        except NVMLError:
            return False

    def let_go(self, card: str) -> None:
        pass  # the simulated driver holds no handles
