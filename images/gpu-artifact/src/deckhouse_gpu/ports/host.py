# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node's hardware as gpu-node-agent reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from deckhouse_gpu.domain.inventory.host_facts import HostFacts
from deckhouse_gpu.domain.inventory.pci import DeviceReadError, PciDevice
from deckhouse_gpu.domain.inventory.pciids import PciIds


class HostUnreadable(Exception):
    """The PCI device list itself could not be read: nothing can be concluded from this scan."""


@dataclass(frozen=True)
class PciScan:
    gpus: list[PciDevice]
    errors: list[DeviceReadError] = field(default_factory=list)
    scanned: int = 0  # PCI functions looked at, GPUs or not


class HostReader(Protocol):
    def scan_pci(self) -> PciScan:
        """Every supported GPU; raises HostUnreadable when the device list is unreadable."""
        ...

    def facts(self) -> HostFacts: ...

    def pci_ids(self) -> PciIds | None:
        """The name database, or None when the host has none."""
        ...
