# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One NVML snapshot of one card: NOT_SUPPORTED blanks a field, anything else fails the card."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_profiles import MigProfileReader
from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot
from deckhouse_gpu.ports.nvml import NVMLQueryFailed

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

_MIB = 1024 * 1024

LibraryWideCheck = Callable[[Any, Any, str], None]
"""Raises NVMLUnavailable (and forgets the initialisation) when an error is library-wide."""


class CardReader:
    """Reads every field of one card's ``DeviceSnapshot`` through its NVML handle."""

    def __init__(self, nv: Any, handle: Any, address: str, raise_if_library_wide: LibraryWideCheck) -> None:
        self.nv, self.handle, self.address = nv, handle, address
        self.raise_if_library_wide = raise_if_library_wide

    def query(self, query: str, *args: Any, optional: bool = False) -> Any:
        nv = self.nv
        try:
            return getattr(nv, query)(self.handle, *args)
        except nv.NVMLError as error:
            # FUNCTION_NOT_FOUND: the driver's library predates the query, as good as unsupported.
            if optional and error.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND):
                return None
            self.raise_if_library_wide(nv, error, query)
            raise NVMLQueryFailed(self.address, query, describe(error)) from error

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
            mig_profiles=() if mig_mode is None else MigProfileReader(self).mig_profiles(int(memory.total)),
        )


def _watts(milliwatts: int | None) -> int | None:
    return None if milliwatts is None else (int(milliwatts) + 500) // 1000


def _text_or_none(value: Any) -> str | None:
    text = "" if value is None else str(value).strip()
    return text or None
