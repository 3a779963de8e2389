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
import math
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhouse_gpu.ports.nvml import (
    DeviceSnapshot,
    DriverInfo,
    GpuInstanceProfile,
    NVMLDeviceNotFound,
    NVMLQueryFailed,
    NVMLUnavailable,
    Placement,
)

log = logging.getLogger(__name__)

# nvmlDeviceArchitecture_t; DLA/NPU codes are not GPUs and "unknown" is 0xffffffff.
ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}

_BUS_ID = re.compile(r"^([0-9a-f]{1,8}):([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$")
_MIB = 1024 * 1024
_PROFILE_VERSIONS = (3, 2, 1)  # nvmlGpuInstanceProfileInfo_v3, _v2 and the unversioned v1
_MIN_PROFILE_INDEXES = 32


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
                self._raise_if_library_wide(nv, error, "nvmlDeviceGetHandleByIndex")
                # A lost card must not hide the others; its own snapshot() reports it by address.
                log.warning("NVML device %d: cannot read its PCI address: %s", index, _describe(error))
        return sorted(addresses)

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        try:
            address = normalize_pci_address(pci_address)
        except ValueError as error:
            raise NVMLDeviceNotFound(str(error)) from error
        nv, _ = self._ready()
        try:
            handle = nv.nvmlDeviceGetHandleByPciBusId(address)
        except nv.NVMLError as error:
            self._raise_if_library_wide(nv, error, "nvmlDeviceGetHandleByPciBusId")
            if error.value in (nv.NVML_ERROR_NOT_FOUND, getattr(nv, "NVML_ERROR_GPU_NOT_FOUND", None)):
                raise NVMLDeviceNotFound(f"{address}: NVML knows no device at this address") from error
            raise NVMLQueryFailed(address, "nvmlDeviceGetHandleByPciBusId", _describe(error)) from error
        return _CardReader(self, nv, handle, address).read()

    def close(self) -> None:
        with self._lock:
            if self._driver is not None:
                self._driver = None
                nv = self._module()
                try:
                    nv.nvmlShutdown()
                except nv.NVMLError as error:
                    log.debug("nvmlShutdown: %s", _describe(error))

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
                raise NVMLUnavailable(f"{query} failed: {_describe(error)}") from error
        return None

    def _library_wide(self, nv: Any, query: str, call: Callable[[], Any]) -> Any:
        """A query whose failure means NVML as a whole does not work."""
        try:
            return call()
        except nv.NVMLError as error:
            self._driver = None
            raise NVMLUnavailable(_unavailable_message(nv, query, error)) from error

    def _raise_if_library_wide(self, nv: Any, error: Any, query: str) -> None:
        if error.value in _library_codes(nv):
            self._driver = None  # initialise again next time: the driver may have been reloaded
            raise NVMLUnavailable(_unavailable_message(nv, query, error)) from error


class _CardReader:
    """One snapshot of one card: NOT_SUPPORTED blanks a field, anything else fails the card."""

    def __init__(self, owner: RealNVML, nv: Any, handle: Any, address: str) -> None:
        self.owner, self.nv, self.handle, self.address = owner, nv, handle, address
        self.profile_versions = list(_PROFILE_VERSIONS)
        self.profile_version_confirmed = False

    def query(self, query: str, *args: Any, optional: bool = False) -> Any:
        nv = self.nv
        try:
            return getattr(nv, query)(self.handle, *args)
        except nv.NVMLError as error:
            # FUNCTION_NOT_FOUND: the driver's library predates the query, as good as unsupported.
            if optional and error.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND):
                return None
            self.owner._raise_if_library_wide(nv, error, query)
            raise NVMLQueryFailed(self.address, query, _describe(error)) from error

    def read(self) -> DeviceSnapshot:
        memory = self.query("nvmlDeviceGetMemoryInfo")
        major, minor = self.query("nvmlDeviceGetCudaComputeCapability")
        architecture = self.query("nvmlDeviceGetArchitecture", optional=True)
        limits = self.query("nvmlDeviceGetPowerManagementLimitConstraints", optional=True)
        mig_mode = self.query("nvmlDeviceGetMigMode", optional=True)
        enabled = self.nv.NVML_DEVICE_MIG_ENABLE
        return DeviceSnapshot(
            pci_address=self.address,
            name=str(self.query("nvmlDeviceGetName")),
            uuid=str(self.query("nvmlDeviceGetUUID")),
            memory_total_mib=int(memory.total) // _MIB,
            compute_capability=(int(major), int(minor)),
            architecture=None if architecture is None else ARCHITECTURES.get(int(architecture)),
            board_part_number=_text_or_none(self.query("nvmlDeviceGetBoardPartNumber", optional=True)),
            power_limit_min_w=None if limits is None else _watts(limits[0]),
            power_limit_max_w=None if limits is None else _watts(limits[1]),
            power_limit_current_w=_watts(self.query("nvmlDeviceGetPowerManagementLimit", optional=True)),
            power_limit_enforced_w=_watts(self.query("nvmlDeviceGetEnforcedPowerLimit", optional=True)),
            mig_supported=mig_mode is not None,
            mig_current_enabled=None if mig_mode is None else mig_mode[0] == enabled,
            mig_pending_enabled=None if mig_mode is None else mig_mode[1] == enabled,
            mig_profiles=() if mig_mode is None else self.mig_profiles(int(memory.total)),
        )

    def mig_profiles(self, total_bytes: int) -> tuple[GpuInstanceProfile, ...]:
        # Probe past the bindings' PROFILE_COUNT: a newer driver may know profiles they do not.
        indexes = range(
            max(int(getattr(self.nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0)), _MIN_PROFILE_INDEXES)
        )
        profiles: dict[int, GpuInstanceProfile] = {}
        for index in indexes:
            info = self.profile_info(index)
            if info is not None and int(info.id) not in profiles:
                profiles[int(info.id)] = _profile(info, self.placements(int(info.id)), total_bytes)
        return tuple(profiles.values())

    def profile_info(self, index: int) -> Any | None:
        """The profile at ``index``, newest struct version first; None when the card has none there."""
        nv = self.nv
        for version in list(self.profile_versions):
            try:
                info = nv.nvmlDeviceGetGpuInstanceProfileInfo(self.handle, index, version)
            except nv.NVMLError as error:
                if error.value in (nv.NVML_ERROR_FUNCTION_NOT_FOUND, nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH):
                    self.profile_versions.remove(version)  # the bindings or the driver lack this version
                    continue
                if error.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_INVALID_ARGUMENT):
                    # Until one version has answered, "invalid" may mean the struct version, not
                    # the index (drivers older than ARGUMENT_VERSION_MISMATCH): try the older ones.
                    if self.profile_version_confirmed:
                        return None
                    continue
                self.owner._raise_if_library_wide(nv, error, "nvmlDeviceGetGpuInstanceProfileInfo")
                query = f"nvmlDeviceGetGpuInstanceProfileInfo(profile index {index}, v{version})"
                raise NVMLQueryFailed(self.address, query, _describe(error)) from error
            del self.profile_versions[: self.profile_versions.index(version)]
            self.profile_version_confirmed = True
            return info
        return None

    def placements(self, profile_id: int) -> tuple[Placement, ...]:
        # Two calls, as go-nvml does: a NULL array asks for the count, then the array is filled.
        query = "nvmlDeviceGetGpuInstancePossiblePlacements"
        count = ctypes.c_uint(0)
        if self.query(query, profile_id, None, ctypes.byref(count), optional=True) is None or not count.value:
            return ()
        array = (self.nv.c_nvmlGpuInstancePlacement_t * count.value)()
        self.query(query, profile_id, array, ctypes.byref(count))
        return tuple(Placement(int(entry.start), int(entry.size)) for entry in array[: count.value])


def _profile(info: Any, placements: tuple[Placement, ...], total_bytes: int) -> GpuInstanceProfile:
    raw = getattr(info, "name", b"")  # the v1 struct has no name
    name = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)).strip()
    if name == "MIG" or name.startswith("MIG "):
        name = name[3:].strip()  # NVML says "MIG 1g.6gb"; nvidia-smi and users say "1g.6gb"
    memory_mib = int(info.memorySizeMB)  # NVML's "MB" here are MiB (A30 1g.6gb: 5952)
    return GpuInstanceProfile(
        profile_id=int(info.id),
        name=name.removeprefix("MIG ").strip()
        or f"{int(info.sliceCount)}g.{mig_memory_gb(memory_mib, total_bytes)}gb",
        memory_mib=memory_mib,
        slice_count=int(info.sliceCount),
        instance_count=int(info.instanceCount),
        multiprocessors=int(info.multiprocessorCount),
        copy_engines=int(info.copyEngineCount),
        decoders=int(info.decoderCount),
        encoders=int(info.encoderCount),
        jpeg_engines=int(info.jpegCount),
        ofa_engines=int(info.ofaCount),
        placements=placements,
    )


def mig_memory_gb(profile_mib: int, total_bytes: int) -> int:
    """The GB in a MIG profile name, computed as go-nvlib names profiles (1g.5gb on a 40 GB A100):
    the card's share rounded up to eighths, times the card's size rounded up to whole GiB."""
    if total_bytes <= 0:
        return math.floor(profile_mib / 1024 + 0.5)
    share = math.ceil(profile_mib * _MIB / total_bytes * 8) / 8
    return math.floor(share * -(-total_bytes // (1024 * _MIB)) + 0.5)


def _watts(milliwatts: int | None) -> int | None:
    return None if milliwatts is None else (int(milliwatts) + 500) // 1000


def _text_or_none(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None


def _library_codes(nv: Any) -> set[int]:
    names = ("UNINITIALIZED", "LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED", "LIB_RM_VERSION_MISMATCH")
    return {getattr(nv, f"NVML_ERROR_{name}") for name in names}


def _unavailable_message(nv: Any, query: str, error: Any) -> str:
    hints = {
        nv.NVML_ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 was not found: the NVIDIA driver's user-space "
        "part is not installed where gpu-handler looks; check the driver installation and the driver root",
        nv.NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel module is not loaded: load it (modprobe nvidia) "
        "or wait for the driver container to finish installing",
        nv.NVML_ERROR_LIB_RM_VERSION_MISMATCH: "the NVML library does not match the loaded kernel module, "
        "usually after a driver upgrade without a reboot: reboot the node or reload the nvidia module",
        nv.NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA device files: gpu-handler must run "
        "privileged with /dev mounted",
        nv.NVML_ERROR_UNINITIALIZED: "NVML was shut down underneath gpu-handler; it will initialise again",
    }
    hint = hints.get(error.value)
    return f"{query} failed: {_describe(error)}" + (f"; {hint}" if hint else "")


def _describe(error: Any) -> str:
    return f"{error} (NVML return code {getattr(error, 'value', '?')})"
