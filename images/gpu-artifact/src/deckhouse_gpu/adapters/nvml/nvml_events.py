# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ``XidEvents`` port on nvidia-ml-py: an NVML event set with the cards registered for
``nvmlEventTypeXidCriticalError``, waited on with ``nvmlEventSetWait_v2``.

An event names its card by NVML device handle. The handles are remembered when the cards are
registered, so a card that has just fallen off the bus (Xid 79) is still named without asking
NVML about it, which would fail; a handle not registered here is looked up by its PCI info.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence
from typing import Any

from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML, normalize_pci_address
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLError, NVMLQueryFailed, XidEvent

log = logging.getLogger(__name__)


def _handle_key(handle: Any) -> int:
    """An NVML device handle is a pointer that stays the same for a card while NVML is initialised."""
    return int(ctypes.cast(handle, ctypes.c_void_p).value or 0)


class RealXidEvents:
    """Opens event sets through the same initialised NVML as the snapshots (``RealNVML``)."""

    def __init__(self, nvml: RealNVML) -> None:
        self.nvml = nvml

    def open_xid_events(self, pci_addresses: Sequence[str]) -> RealXidSubscription:
        nv = self.nvml.bindings()  # initialises NVML, or raises NVMLUnavailable
        try:
            event_set = nv.nvmlEventSetCreate()
        except nv.NVMLError as error:
            self.nvml.raise_if_library_wide(nv, error, "nvmlEventSetCreate")
            raise NVMLError(f"nvmlEventSetCreate failed: {describe(error)}") from error
        subscription = RealXidSubscription(nv, event_set)
        try:
            for address in pci_addresses:
                self._register(nv, subscription, address)
        except NVMLError:
            subscription.close()
            raise
        return subscription

    def _register(self, nv: Any, subscription: RealXidSubscription, address: str) -> None:
        try:
            _, handle, normalized = self.nvml.device_handle(address)
        except (NVMLDeviceNotFound, NVMLQueryFailed) as error:
            log.warning("Xid events: card skipped: %s", error, extra={"pciAddress": address})
            return
        try:
            nv.nvmlDeviceRegisterEvents(handle, nv.nvmlEventTypeXidCriticalError, subscription.event_set)
        except nv.NVMLError as error:
            self.nvml.raise_if_library_wide(nv, error, "nvmlDeviceRegisterEvents")
            if error.value == nv.NVML_ERROR_NOT_SUPPORTED:
                log.info(
                    "Xid events: the card does not support them; its Xid errors are not watched",
                    extra={"pciAddress": normalized},
                )
            else:
                log.warning(
                    "Xid events: cannot register the card: %s",
                    describe(error),
                    extra={"pciAddress": normalized},
                )
            return
        subscription.add(handle, normalized)


class RealXidSubscription:
    def __init__(self, nv: Any, event_set: Any) -> None:
        self.nv = nv
        self.event_set = event_set
        self._cards: dict[int, str] = {}
        self.registered: tuple[str, ...] = ()

    def add(self, handle: Any, address: str) -> None:
        self._cards[_handle_key(handle)] = address
        self.registered = tuple(sorted(set(self._cards.values())))

    def wait(self, timeout_seconds: float) -> XidEvent | None:
        nv = self.nv
        try:
            data = nv.nvmlEventSetWait_v2(self.event_set, max(int(timeout_seconds * 1000), 1))
        except nv.NVMLError as error:
            if error.value == nv.NVML_ERROR_TIMEOUT:
                return None
            raise NVMLError(f"nvmlEventSetWait_v2 failed: {describe(error)}") from error
        if not int(data.eventType) & nv.nvmlEventTypeXidCriticalError:
            return None  # only Xid events are registered; anything else is not ours to judge
        address = self._cards.get(_handle_key(data.device)) or self._address_of(data.device)
        if address is None:
            log.warning("Xid %d on a card that cannot be named; ignored", int(data.eventData))
            return None
        return XidEvent(address, int(data.eventData))

    def _address_of(self, handle: Any) -> str | None:
        try:
            return normalize_pci_address(self.nv.nvmlDeviceGetPciInfo_v3(handle).busId)
        except (self.nv.NVMLError, ValueError):
            return None

    def close(self) -> None:
        if self.event_set is None:
            return
        event_set, self.event_set = self.event_set, None
        try:
            self.nv.nvmlEventSetFree(event_set)
        except self.nv.NVMLError as error:
            log.debug("nvmlEventSetFree: %s", describe(error))
