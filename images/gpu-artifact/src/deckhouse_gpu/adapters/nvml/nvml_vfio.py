# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GpuProcesses port on nvidia-ml-py: who runs on a card before it goes to a virtual machine,
and whether NVML sees it again after it came back (DESIGN.md D7).

NVML lists the cards when it is initialised, so a card that the nvidia driver takes again later
(given back from vfio-pci) may stay unknown to it: when the kernel driver already has the card
(its /proc/driver/nvidia/gpus entry) and NVML does not, NVML is initialised again once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLError
from deckhouse_gpu.ports.vfio import VfioError


class RealGpuProcesses:
    def __init__(self, nvml: RealNVML, host_root: Path | str = "/") -> None:
        self.nvml = nvml
        self.gpus = Path(host_root) / "proc/driver/nvidia/gpus"

    def processes(self, card: str) -> tuple[int, ...]:
        try:
            nv, handle, address = self.nvml.device_handle(card)
        except NVMLError as error:
            raise VfioError(f"card {card}: NVML cannot list its processes: {error}") from error
        pids: set[int] = set()
        # On a MIG card the parent handle reports the processes of every MIG device (as root).
        for kind in ("Compute", "Graphics"):
            found = self._listed(nv, handle, address, kind)
            pids.update(int(process.pid) for process in found)
        return tuple(sorted(pids))

    @staticmethod
    def _listed(nv: Any, handle: Any, address: str, kind: str) -> list[Any]:
        for version in ("_v3", "_v2"):  # older drivers lack _v3 (FUNCTION_NOT_FOUND)
            query = f"nvmlDeviceGet{kind}RunningProcesses{version}"
            try:
                return list(getattr(nv, query)(handle))
            except nv.NVMLError as error:
                if error.value == nv.NVML_ERROR_FUNCTION_NOT_FOUND:
                    continue
                if kind == "Graphics" and error.value == nv.NVML_ERROR_NOT_SUPPORTED:
                    return []  # a compute-only card has no graphics processes to list
                raise VfioError(f"{address}: {query} failed: {describe(error)}") from error
        return []

    def visible(self, card: str) -> bool:
        if not (self.gpus / card.lower()).exists():
            return False  # the kernel driver has not taken the card (yet)
        try:
            self.nvml.device_handle(card)
            return True
        except NVMLDeviceNotFound:
            self.nvml.close()  # initialised before the card came back: list the cards again
        except NVMLError:
            return False
        try:
            self.nvml.device_handle(card)
            return True
        except NVMLError:
            return False

    def let_go(self, card: str) -> None:
        self.nvml.close()
