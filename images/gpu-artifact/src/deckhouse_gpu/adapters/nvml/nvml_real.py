# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The NVML port on nvidia-ml-py (``pynvml``): the real library behind the real driver.

pynvml keeps one library handle per process (``pynvml.nvmlLib``) and only ever opens it by the
bare name ``libnvidia-ml.so.1``, which the dynamic loader cannot find inside the handler's
container: the driver lives under the mounted driver root. So when prestart found the library,
it is opened from that path and put into ``nvmlLib`` under pynvml's own ``libLoadLock`` before
``nvmlInit``; pynvml then uses it as if it had loaded it itself.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.nvml.nvml_card import ARCHITECTURES, CardReader
from deckhouse_gpu.adapters.nvml.nvml_errors import describe, library_codes, unavailable_message
from deckhouse_gpu.adapters.nvml.nvml_profiles import mig_memory_gb
from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot, DriverInfo
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLQueryFailed, NVMLUnavailable

# The snapshot's tables and arithmetic live beside their readers; importable from here as before.
__all__ = ["ARCHITECTURES", "RealNVML", "cuda_version_text", "mig_memory_gb", "normalize_pci_address"]

log = logging.getLogger(__name__)

_BUS_ID = re.compile(r"^([0-9a-f]{1,8}):([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$")


def normalize_pci_address(bus_id: str | bytes) -> str:
    """``00000000:17:00.0`` (NVML) or ``0000:17:00.0`` (sysfs), any case -> ``0000:17:00.0``."""
    text = bus_id.decode("ascii", "replace") if isinstance(bus_id, bytes) else bus_id
    match = _BUS_ID.match(text.strip("\x00 \n").lower())
    if match is None:
        raise ValueError(f"not a PCI address: {text!r}")
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{function}"


def cuda_version_text(encoded: int) -> str | None:
    """NVML encodes CUDA 12.4 as 12040 (major * 1000 + minor * 10)."""
    return f"{encoded // 1000}.{encoded % 1000 // 10}" if encoded > 0 else None


class RealNVML:
    """Initialises NVML once, on first use, and re-initialises after a library-wide failure."""

    def __init__(
        self,
        library_path: Path | str | None = None,
        *,
        bindings: Any = None,
        load_library: Callable[[str], Any] = ctypes.CDLL,
    ) -> None:
        self._library_path = None if library_path is None else str(library_path)
        self._bindings = bindings
        self._load_library = load_library
        self._lock = threading.Lock()
        self._driver: DriverInfo | None = None

    def driver(self) -> DriverInfo:
        return self._ready()[1]

    def device_addresses(self) -> list[str]:
        nv, _ = self._ready()
        count = self._library_wide(nv, "nvmlDeviceGetCount", nv.nvmlDeviceGetCount)
        addresses: list[str] = []
        for index in range(count):
            try:
                addresses.append(
                    normalize_pci_address(
                        nv.nvmlDeviceGetPciInfo_v3(nv.nvmlDeviceGetHandleByIndex(index)).busId
                    )
                )
            except nv.NVMLError as error:
                self.raise_if_library_wide(nv, error, "nvmlDeviceGetHandleByIndex")
                # A lost card must not hide the others; its own snapshot() reports it by address.
                log.warning("NVML device %d: cannot read its PCI address: %s", index, describe(error))
        return sorted(addresses)

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        nv, handle, address = self.device_handle(pci_address)
        return CardReader(nv, handle, address, self.raise_if_library_wide).read()

    def bindings(self) -> Any:
        """The bindings with NVML initialised, for the adapters beside the snapshot (Xid events)."""
        return self._ready()[0]

    def device_handle(self, pci_address: str) -> tuple[Any, Any, str]:
        """The bindings, the card's NVML handle and its normalised address, initialising NVML first;
        for the adapters that act on a card (MIG control) beside the snapshot."""
        try:
            address = normalize_pci_address(pci_address)
        except ValueError as error:
            raise NVMLDeviceNotFound(str(error)) from error
        nv, _ = self._ready()
        try:
            return nv, nv.nvmlDeviceGetHandleByPciBusId(address), address
        except nv.NVMLError as error:
            self.raise_if_library_wide(nv, error, "nvmlDeviceGetHandleByPciBusId")
            if error.value in (nv.NVML_ERROR_NOT_FOUND, getattr(nv, "NVML_ERROR_GPU_NOT_FOUND", None)):
                raise NVMLDeviceNotFound(f"{address}: NVML knows no device at this address") from error
            raise NVMLQueryFailed(address, "nvmlDeviceGetHandleByPciBusId", describe(error)) from error

    def close(self) -> None:
        with self._lock:
            if self._driver is not None:
                self._driver = None
                nv = self._module()
                try:
                    nv.nvmlShutdown()
                except nv.NVMLError as error:
                    log.debug("nvmlShutdown: %s", describe(error))

    def _ready(self) -> tuple[Any, DriverInfo]:
        driver = self._driver
        if driver is not None:
            return self._bindings, driver  # initialised: no lock on the hot path
        with self._lock:
            nv = self._module()
            if self._driver is None:
                self._open_library(nv)
                self._library_wide(nv, "nvmlInit", nv.nvmlInit)
                version = self._library_wide(nv, "nvmlSystemGetDriverVersion", nv.nvmlSystemGetDriverVersion)
                self._driver = DriverInfo(str(version), self._cuda_version(nv))
                log.info("NVML initialised: driver %s, CUDA %s", version, self._driver.cuda_version)
            return nv, self._driver

    def _module(self) -> Any:
        # Imported on first use so that hosts without NVIDIA cards never touch it.
        if self._bindings is None:
            self._bindings = importlib.import_module("pynvml")
        return self._bindings

    def _open_library(self, nv: Any) -> None:
        if self._library_path is None:
            return  # pynvml opens libnvidia-ml.so.1 through the loader's search path
        with nv.libLoadLock:
            if nv.nvmlLib is not None:
                return  # already open (an earlier init in this process): NVML refcounts inits
            try:
                nv.nvmlLib = self._load_library(self._library_path)
            except OSError as error:
                raise NVMLUnavailable(
                    f"cannot load the NVML library {self._library_path}: {error}; check that the driver "
                    "is still installed under the driver root (prestart found it there)"
                ) from error

    def _cuda_version(self, nv: Any) -> str | None:
        for query in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
            try:
                return cuda_version_text(int(getattr(nv, query)()))
            except nv.NVMLError as error:
                if error.value == nv.NVML_ERROR_FUNCTION_NOT_FOUND:
                    continue  # _v2 appeared in later drivers; older ones have the plain query
                if error.value == nv.NVML_ERROR_NOT_SUPPORTED:
                    return None
                raise NVMLUnavailable(f"{query} failed: {describe(error)}") from error
        return None

    def _library_wide(self, nv: Any, query: str, call: Callable[[], Any]) -> Any:
        """A query whose failure means NVML as a whole does not work."""
        try:
            return call()
        except nv.NVMLError as error:
            self._driver = None
            raise NVMLUnavailable(unavailable_message(nv, query, error)) from error

    def raise_if_library_wide(self, nv: Any, error: Any, query: str) -> None:
        """Raises NVMLUnavailable, and initialises again next time, when the error is library-wide."""
        if error.value in library_codes(nv):
            self._driver = None  # initialise again next time: the driver may have been reloaded
            raise NVMLUnavailable(unavailable_message(nv, query, error)) from error
