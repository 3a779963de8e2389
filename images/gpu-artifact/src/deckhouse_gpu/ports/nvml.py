# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NVML as gpu-handler sees it: plain snapshots of what the driver reports, and typed errors.

Two adapters implement ``NVML``: the real one on nvidia-ml-py (``pynvml``) and a simulated one
driven by per-model data files. Errors say what failed, so the handler can set
``HardwareHealthy`` reasons (``NVMLUnavailable`` for the library or driver as a whole,
``NVMLQueryFailed`` for one card) without knowing NVML's return codes. ``XidEvents`` is the
event side: waiting for the critical Xid errors the driver reports (domain/inventory/health/xid.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot, DriverInfo


class NVMLError(Exception):
    """Base of every NVML failure."""


class NVMLUnavailable(NVMLError):
    """The library cannot be loaded or initialised, or the driver is not loaded: no card works."""


class NVMLDeviceNotFound(NVMLError):
    """NVML does not know a device at this PCI address (unbound, lost, or not NVIDIA's)."""


class NVMLQueryFailed(NVMLError):
    """A query for one card failed (the card is lost, fell off the bus, needs a reset, ...)."""

    def __init__(self, pci_address: str, query: str, detail: str) -> None:
        super().__init__(f"{pci_address}: {query} failed: {detail}")
        self.pci_address = pci_address
        self.query = query
        self.detail = detail


class NVML(Protocol):
    def driver(self) -> DriverInfo:
        """Initialises on first use; raises NVMLUnavailable when NVML cannot work at all."""
        ...

    def device_addresses(self) -> list[str]:
        """PCI addresses (``0000:17:00.0``, lowercase) of every device NVML sees."""
        ...

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        """One card's snapshot; NVMLDeviceNotFound or NVMLQueryFailed for this card only."""
        ...


@dataclass(frozen=True)
class XidEvent:
    """A critical Xid error NVML reported for one card (``eventData`` of the event)."""

    pci_address: str
    xid: int


class XidSubscription(Protocol):
    """An NVML event set with the cards registered for critical Xid events."""

    registered: tuple[str, ...]  # the cards that report Xid events (others do not support them)

    def wait(self, timeout_seconds: float) -> XidEvent | None:
        """The next event, or None when none came within the timeout; NVMLError when the wait
        itself fails (NVML does not say for which card then)."""
        ...

    def close(self) -> None: ...


class XidEvents(Protocol):
    def open_xid_events(self, pci_addresses: Sequence[str]) -> XidSubscription:
        """Registers each card for critical Xid events; a card that does not support them or
        fails is left out (``registered`` says which remain). NVMLUnavailable when NVML as a whole
        does not work."""
        ...
