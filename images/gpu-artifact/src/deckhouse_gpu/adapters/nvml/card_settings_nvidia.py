# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A card's sharing settings on real hardware (``ports.sharing.CardSettings``): one applier (a
reader and a maker) per card setting a strategy needs, registered in ``APPLIERS``; a new setting
adds its pair of methods and its line there.

The compute mode goes through NVML (``nvmlDeviceGet/SetComputeMode``) on the handle the
snapshots use. The time-slice interval has no NVML call: the library's public API (nvidia-ml-py
13.615) sets and reads time slices only for vGPU schedulers, not for the compute policy of a bare
card, so it is set the way NVIDIA's own DRA driver sets it, by ``nvidia-smi compute-policy``
from the driver root, with ``libnvidia-ml.so.1`` preloaded as ``run_nvidia_smi`` runs it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.nvml.nvml_errors import describe
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML, normalize_pci_address
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.mps_sharing import COMPUTE_MODE, ComputeMode
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICE, TimeSliceInterval
from deckhouse_gpu.domain.prepare.container.driver_layout import BINARY_DIRS, LIBRARY_DIRS
from deckhouse_gpu.ports.nvml import NVMLError
from deckhouse_gpu.ports.sharing import SharingError

NVIDIA_SMI = "nvidia-smi"
NVML_LIBRARY = "libnvidia-ml.so.1"
# NVML_COMPUTEMODE_* (EXCLUSIVE_THREAD, 1, is no longer supported by the driver).
_CODES = {ComputeMode.DEFAULT: 0, ComputeMode.PROHIBITED: 2, ComputeMode.EXCLUSIVE_PROCESS: 3}
_MODES = {code: mode for mode, code in _CODES.items()}

Run = Callable[..., "subprocess.CompletedProcess[str]"]


def nvidia_smi_bus_id(card: str) -> str:
    """``0000:17:00.0`` -> ``00000000:17:00.0``, the form nvidia-smi prints and takes with -i."""
    domain, rest = normalize_pci_address(card).split(":", 1)
    return f"{int(domain, 16):08X}:{rest.upper()}"


def find_in_root(tree: MountedDriverRoot, name: str, directories: tuple[str, ...]) -> Path | None:
    """The container path of ``name`` in the first of ``directories`` of the driver root that has it."""
    for directory in directories:
        found = tree.find_file(f"{directory}/{name}")
        if found is not None:
            return found
    return None


class NvidiaCardSettings:
    # A card setting's name -> the methods that read and make it (testkit's fault wrappers name
    # their call sites after them).
    APPLIERS: ClassVar[Mapping[str, tuple[str, str]]] = {
        TIME_SLICE.name: ("time_slice", "set_time_slice"),
        COMPUTE_MODE.name: ("compute_mode", "set_compute_mode"),
    }

    def __init__(
        self,
        nvml: RealNVML,
        driver_root: MountedDriverRoot,
        *,
        run: Run = subprocess.run,
        timeout_s: float = 30.0,
    ) -> None:
        self.nvml, self.driver_root, self.run, self.timeout_s = nvml, driver_root, run, timeout_s

    def read(self, card: str, setting: CardSetting) -> str | None:
        reader: Callable[[str], str | None] = getattr(self, self._applier(card, setting)[0])
        return reader(card)

    def apply(self, card: str, setting: CardSetting, value: str) -> None:
        maker: Callable[[str, str], None] = getattr(self, self._applier(card, setting)[1])
        maker(card, value)

    def _applier(self, card: str, setting: CardSetting) -> tuple[str, str]:
        applier = self.APPLIERS.get(setting.name)
        if applier is None:
            raise SharingError(
                f"card {card}: gpu-handler cannot make the card setting {setting.name} on NVIDIA cards"
            )
        return applier

    def time_slice(self, card: str) -> TimeSliceInterval | None:
        """Always None: the interval is not in NVML, and nvidia-smi shows it only in its
        human-readable output (``compute-policy -l``), whose wording is not a stable format, so
        prepare sets it every time instead of trusting a parse."""
        return None

    def set_time_slice(self, card: str, value: str) -> None:
        interval = TimeSliceInterval(value)
        smi = find_in_root(self.driver_root, NVIDIA_SMI, BINARY_DIRS)
        library = find_in_root(self.driver_root, NVML_LIBRARY, LIBRARY_DIRS)
        if smi is None or library is None:
            missing = " and ".join(n for n, p in ((NVIDIA_SMI, smi), (NVML_LIBRARY, library)) if p is None)
            raise SharingError(
                f"card {card}: cannot set the time-slice interval to {interval}: {missing} not found "
                f"under the driver root {self.driver_root.mount}"
            )
        argv = [str(smi), "compute-policy", "-i", nvidia_smi_bus_id(card), "--set-timeslice"]
        argv.append(str(interval.nvidia_smi_value))
        command = " ".join(argv)
        try:
            result = self.run(
                argv,
                env={"LD_PRELOAD": str(library)},  # nvidia-smi dlopens NVML by name: not on our loader's path
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SharingError(f"card {card}: {command} did not finish in {self.timeout_s:g} s") from None
        except OSError as error:
            raise SharingError(f"card {card}: cannot run {command}: {error.strerror or error}") from error
        if result.returncode != 0:
            # nvidia-smi says why on stdout as often as on stderr: both are shown.
            output = result.stdout.strip() or "no output"
            if result.stderr.strip():
                output += f" (stderr: {result.stderr.strip()})"
            raise SharingError(
                f"card {card}: {command} exited with code {result.returncode} "
                f"setting the time-slice interval {interval}: {output}"
            )

    def compute_mode(self, card: str) -> ComputeMode:
        code = int(self._call(card, "nvmlDeviceGetComputeMode"))
        mode = _MODES.get(code)
        if mode is None:
            raise SharingError(f"card {card}: NVML reports compute mode {code}, unknown to gpu-handler")
        return mode

    def set_compute_mode(self, card: str, mode: str) -> None:
        self._call(card, "nvmlDeviceSetComputeMode", _CODES[ComputeMode(mode)])

    def _call(self, card: str, query: str, *args: Any) -> Any:
        try:
            nv, handle, _ = self.nvml.device_handle(card)
        except NVMLError as error:
            raise SharingError(f"card {card}: {query}: {error}") from error
        try:
            return getattr(nv, query)(handle, *args)
        except nv.NVMLError as error:
            try:
                self.nvml.raise_if_library_wide(nv, error, query)
            except NVMLError as wide:
                raise SharingError(f"card {card}: {wide}") from error
            raise SharingError(f"card {card}: {query} failed: {describe(error)}") from error
