# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What VFIO passthrough reads and changes on the node (DESIGN.md D7, docs/VFIO.md): PCI functions
and their drivers in sysfs, the processes NVML sees on a card, the claims' payload files and the
ledger of functions this driver moved to vfio-pci."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from deckhouse_gpu.domain.prepare.container.cdi_spec import DeviceNode
from deckhouse_gpu.domain.prepare.vfio import PciFunction
from deckhouse_gpu.ports.host_change import HostChangeError


class VfioError(HostChangeError):
    """A sysfs read or write failed; the message names the file, the function and what to do."""


class VfioHost(Protocol):
    def vfio_available(self) -> bool:
        """The vfio-pci driver is registered (its module is loaded)."""
        ...

    def iommu_group(self, address: str) -> int | None:
        """The function's IOMMU group; None when it has none (the IOMMU is off)."""
        ...

    def group_addresses(self, group: int) -> tuple[str, ...]:
        """The PCI addresses of every member of the group, sorted."""
        ...

    def function(self, address: str) -> PciFunction:
        """The function as sysfs shows it now; VfioError when it is gone or unreadable."""
        ...

    def sriov_vfs(self, address: str) -> int:
        """Its enabled SR-IOV virtual functions (0 for a function without SR-IOV)."""
        ...

    def bind_vfio(self, address: str) -> None:
        """driver_override, unbind from the current driver, drivers_probe: the function ends on
        vfio-pci or VfioError says why not."""
        ...

    def restore(self, address: str, driver: str | None) -> None:
        """Clears driver_override, unbinds from vfio-pci and binds ``driver`` again (None: leaves
        it unbound); VfioError when it does not end on ``driver``."""
        ...

    def device_node(self, path: str) -> DeviceNode:
        """A node under the host's /dev (``/dev/vfio/12``), with its numbers when it is a real one."""
        ...


class GpuProcesses(Protocol):
    def processes(self, card: str) -> tuple[int, ...]:
        """PIDs of the compute and graphics processes on the card; VfioError when NVML cannot tell."""
        ...

    def visible(self, card: str) -> bool:
        """The nvidia driver and NVML see the card (after it was given back)."""
        ...

    def let_go(self, card: str) -> None:
        """Closes this process's NVML handles, which would keep the nvidia driver from letting the
        card go; NVML opens again on its next use."""
        ...


class VfioPayloads(Protocol):
    def write_claim(self, claim_uid: str, data: bytes) -> None:
        """Writes the claim's QEMU hook payload atomically, readable by every user."""
        ...

    def host_path(self, claim_uid: str) -> str:
        """The payload as the host (and so a CDI mount) names it."""
        ...

    def delete_claim(self, claim_uid: str) -> None:
        """Removes the claim's payload; none is fine."""
        ...

    def claims_with_files(self) -> set[str]: ...


class VfioLedger(Protocol):
    """Functions this driver moved to vfio-pci, kept beside the checkpoint (which may be lost or set
    aside): what the start-up cleanup gives back when no entry owns it."""

    def add(self, function: str, driver: str | None) -> None:
        """Records the function and the driver it had, before it is moved."""
        ...

    def remove(self, function: str) -> None: ...

    def entries(self) -> Mapping[str, str | None]:
        """Function -> original driver, for this boot's moves only (a reboot undid the others)."""
        ...
