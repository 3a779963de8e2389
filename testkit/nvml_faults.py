# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NVML failing under gpu-handler: wrappers of the ports that talk to the GPU, failing a chosen call.

Every call of the wrapped ports (MIG control, card settings, the processes NVML sees, the sysfs
side of VFIO and the NVML snapshot port) is counted in one sequence, so a fault-free run lists the
call sites a prepare, an unprepare or a capabilities pass reaches, and a later run fails exactly
the n-th of them. The failure is what the real adapter raises for that NVML return code
(adapters/nvml/nvml_mig.py, card_settings_nvidia.py, nvml_vfio.py, nvml_real.py), worded with the same
helpers (adapters/nvml/nvml_errors.py), so the messages checked are the ones a node would show:

- ``gpu-lost`` (NVML_ERROR_GPU_IS_LOST): the card fell off the bus; from that call on, every call
  on the card fails until ``clear()``, as on a node until its reboot;
- ``unknown`` (NVML_ERROR_UNKNOWN) and ``timeout`` (NVML_ERROR_TIMEOUT): that one call fails.

Where the real adapter does not raise (``visible`` answers False, ``time_slice`` reads nothing from
NVML, ``let_go`` swallows nvmlShutdown's errors), the wrapper does the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

import pynvml

from deckhouse_gpu.adapters.nvml.card_settings_nvidia import NvidiaCardSettings
from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_mig import code_name
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot, DriverInfo
from deckhouse_gpu.domain.prepare.container.cdi_spec import DeviceNode
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.domain.prepare.vfio import PciFunction
from deckhouse_gpu.ports.mig import MigControl, MigError
from deckhouse_gpu.ports.nvml import NVML, NVMLQueryFailed, NVMLUnavailable
from deckhouse_gpu.ports.sharing import CardSettings, SharingError
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioError, VfioHost

T = TypeVar("T")


class FaultKind(StrEnum):
    GPU_LOST = "gpu-lost"
    UNKNOWN = "unknown"
    TIMEOUT = "timeout"


CODES: Mapping[FaultKind, int] = {
    FaultKind.GPU_LOST: pynvml.NVML_ERROR_GPU_IS_LOST,
    FaultKind.UNKNOWN: pynvml.NVML_ERROR_UNKNOWN,
    FaultKind.TIMEOUT: pynvml.NVML_ERROR_TIMEOUT,
}
# The C function behind each port method, as the real adapters name it in their messages.
FUNCTIONS: Mapping[str, str] = {
    "mig.mig_enabled": "nvmlDeviceGetMigMode",
    "mig.set_mig_mode": "nvmlDeviceSetMigMode",
    "mig.card_busy": "nvmlDeviceGetComputeRunningProcesses_v3",
    "mig.instances": "nvmlDeviceGetGpuInstances",
    "mig.create_instance": "nvmlDeviceCreateGpuInstanceWithPlacement",
    "mig.destroy_instance": "nvmlGpuInstanceDestroy",
    "settings.compute_mode": "nvmlDeviceGetComputeMode",
    "settings.set_compute_mode": "nvmlDeviceSetComputeMode",
    "gpus.processes": "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvml.driver": "nvmlInit",
    "nvml.snapshot": "nvmlDeviceGetMemoryInfo",
}


def nvml_text(kind: FaultKind) -> str:
    """``GPU is lost (NVML return code 15)``: NVML's own words, as the adapters quote them."""
    return describe(pynvml.NVMLError(CODES[kind]))


@dataclass(frozen=True)
class Call:
    port: str  # mig, settings, gpus, vfio, nvml
    method: str
    card: str  # "" for a call that names no card

    @property
    def site(self) -> str:
        return f"{self.port}.{self.method}"


@dataclass
class NvmlFaults:
    """The shared call counter and the armed fault; ``calls`` lists every call made so far."""

    calls: list[Call] = field(default_factory=list)
    at: int | None = None
    kind: FaultKind = FaultKind.UNKNOWN
    lost: set[str] = field(default_factory=set)  # cards whose GPU is lost until clear()
    injected: list[tuple[Call, FaultKind]] = field(default_factory=list)

    def arm(self, at: int, kind: FaultKind) -> None:
        self.at, self.kind = at, kind

    def clear(self) -> None:
        """The fault is gone (the card reset, the node rebooted): every call works again."""
        self.at = None
        self.lost.clear()

    def failing(self, port: str, method: str, card: str) -> FaultKind | None:
        """Counts the call; the kind of failure it meets, None when it goes through."""
        call = Call(port, method, card)
        index = len(self.calls)
        self.calls.append(call)
        kind: FaultKind | None = None
        if card and card in self.lost:
            kind = FaultKind.GPU_LOST
        elif index == self.at:
            kind = self.kind
            if kind is FaultKind.GPU_LOST and card:
                self.lost.add(card)
        if kind is not None:
            self.injected.append((call, kind))
        return kind

    def guard(self, port: str, method: str, card: str, error: Callable[[str, FaultKind], Exception]) -> None:
        kind = self.failing(port, method, card)
        if kind is not None:
            raise error(f"{port}.{method}", kind)


def _mig_error(card: str) -> Callable[[str, FaultKind], Exception]:
    def build(site: str, kind: FaultKind) -> Exception:
        # adapters/nvml/nvml_mig.py: "<address>: <function> failed: <NVML text> [<code name>]; hint".
        name = code_name(pynvml, CODES[kind])
        return MigError(f"{card}: {FUNCTIONS[site]} failed: {nvml_text(kind)} [{name}]")

    return build


def _sharing_error(card: str) -> Callable[[str, FaultKind], Exception]:
    def build(site: str, kind: FaultKind) -> Exception:
        if site == "settings.set_time_slice":
            # adapters/nvml/card_settings_nvidia.py runs nvidia-smi, which exits 15 or runs out of time.
            if kind is FaultKind.TIMEOUT:
                return SharingError(f"card {card}: nvidia-smi compute-policy did not finish in 30 s")
            return SharingError(
                f"card {card}: nvidia-smi compute-policy exited with code 15 setting the time-slice "
                f"interval: {nvml_text(kind)}"
            )
        return SharingError(f"card {card}: {FUNCTIONS[site]} failed: {nvml_text(kind)}")

    return build


def _vfio_error(card: str) -> Callable[[str, FaultKind], Exception]:
    def build(site: str, kind: FaultKind) -> Exception:
        if site == "gpus.processes":
            return VfioError(f"{card}: {FUNCTIONS[site]} failed: {nvml_text(kind)}")
        # The sysfs side (adapters/host/sysfs_vfio.py): a lost device answers EIO or disappears.
        return VfioError(f"{card}: {site.removeprefix('vfio.')}: [Errno 5] Input/output error ({kind})")

    return build


class FaultyMig:
    """MigControl whose every call may fail as adapters/nvml/nvml_mig.py fails."""

    def __init__(self, inner: MigControl, faults: NvmlFaults) -> None:
        self.inner, self.faults = inner, faults

    def _guard(self, method: str, card: str) -> None:
        self.faults.guard("mig", method, card, _mig_error(card))

    def mig_enabled(self, card: str) -> bool:
        self._guard("mig_enabled", card)
        return self.inner.mig_enabled(card)

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        self._guard("set_mig_mode", card)
        self.inner.set_mig_mode(card, enabled)

    def card_busy(self, card: str) -> bool:
        self._guard("card_busy", card)
        return self.inner.card_busy(card)

    def instances(self, card: str) -> list[MigInstance]:
        self._guard("instances", card)
        return self.inner.instances(card)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        self._guard("create_instance", card)
        return self.inner.create_instance(card, profile_id, placement_start)

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        self._guard("destroy_instance", card)
        self.inner.destroy_instance(card, gpu_instance_id, compute_instance_id)


class FaultySettings:
    """CardSettings failing as adapters/nvml/card_settings_nvidia.py fails: each setting's call
    sites named after the adapter's applier for it (a read with no NVML call behind it, the
    time-slice's, does not fail)."""

    def __init__(self, inner: CardSettings, faults: NvmlFaults) -> None:
        self.inner, self.faults = inner, faults

    def _guard(self, method: str, card: str) -> None:
        self.faults.guard("settings", method, card, _sharing_error(card))

    def read(self, card: str, setting: CardSetting) -> str | None:
        reader, _ = NvidiaCardSettings.APPLIERS[setting.name]
        if f"settings.{reader}" in FUNCTIONS:
            self._guard(reader, card)
        return self.inner.read(card, setting)

    def apply(self, card: str, setting: CardSetting, value: str) -> None:
        self._guard(NvidiaCardSettings.APPLIERS[setting.name][1], card)
        self.inner.apply(card, setting, value)


class FaultyGpuProcesses:
    """GpuProcesses as adapters/nvml/nvml_vfio.py: ``processes`` raises, ``visible`` answers False."""

    def __init__(self, inner: GpuProcesses, faults: NvmlFaults) -> None:
        self.inner, self.faults = inner, faults

    def processes(self, card: str) -> tuple[int, ...]:
        self.faults.guard("gpus", "processes", card, _vfio_error(card))
        return self.inner.processes(card)

    def visible(self, card: str) -> bool:
        if self.faults.failing("gpus", "visible", card) is not None:
            return False
        return self.inner.visible(card)

    def let_go(self, card: str) -> None:
        self.inner.let_go(card)


class FaultyVfioHost:
    """The sysfs side of VFIO; a lost card's function answers EIO to what reads or moves it."""

    def __init__(self, inner: VfioHost, faults: NvmlFaults) -> None:
        self.inner, self.faults = inner, faults

    def _guard(self, method: str, address: str) -> None:
        self.faults.guard("vfio", method, address, _vfio_error(address))

    def vfio_available(self) -> bool:
        return self.inner.vfio_available()

    def iommu_group(self, address: str) -> int | None:
        return self.inner.iommu_group(address)

    def group_addresses(self, group: int) -> tuple[str, ...]:
        return self.inner.group_addresses(group)

    def function(self, address: str) -> PciFunction:
        self._guard("function", address)
        return self.inner.function(address)

    def sriov_vfs(self, address: str) -> int:
        return self.inner.sriov_vfs(address)

    def bind_vfio(self, address: str) -> None:
        self._guard("bind_vfio", address)
        self.inner.bind_vfio(address)

    def restore(self, address: str, driver: str | None) -> None:
        self._guard("restore", address)
        self.inner.restore(address, driver)

    def device_node(self, path: str) -> DeviceNode:
        return self.inner.device_node(path)


class FaultyNVML:
    """The NVML port of the capabilities pass, failing as adapters/nvml/nvml_real.py fails: the driver
    query library-wide (NVMLUnavailable), a card's snapshot for that card (NVMLQueryFailed)."""

    def __init__(self, inner: NVML, faults: NvmlFaults) -> None:
        self.inner, self.faults = inner, faults

    def driver(self) -> DriverInfo:
        kind = self.faults.failing("nvml", "driver", "")
        if kind is not None:
            raise NVMLUnavailable(f"nvmlInit failed: {nvml_text(kind)}")
        return self.inner.driver()

    def device_addresses(self) -> list[str]:
        return self.inner.device_addresses()

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        kind = self.faults.failing("nvml", "snapshot", pci_address)
        if kind is not None:
            raise NVMLQueryFailed(pci_address, FUNCTIONS["nvml.snapshot"], nvml_text(kind))
        return self.inner.snapshot(pci_address)
