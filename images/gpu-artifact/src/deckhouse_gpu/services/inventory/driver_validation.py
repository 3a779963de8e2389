# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's own NVIDIA driver validator: its pod's readiness is what ``DriverReady`` reflects.

A driver is ready when the driver root holds ``nvidia-smi`` and ``libnvidia-ml.so.1`` (the same
search as prestart), the ``nvidia`` kernel module is loaded, the library belongs to the loaded
module's version, and the module drives at least one GPU. The mismatch case is the classic
"Driver/library version mismatch" after a driver upgrade without a reboot: every NVML call fails
then, so the card must not be offered.

The check reads files only (the driver root and ``/proc/driver/nvidia``), so the validator runs
unprivileged: opening ``/dev/nvidia*`` for a real NVML call would need a privileged container.
NVML itself is exercised per card by gpu-handler, which reports it as ``HardwareHealthy``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from deckhouse_gpu.ports.driver_files import DriverTree, KernelDriver
from deckhouse_gpu.services.publishing.prestart import NVML_LIBRARY, hints, normalise_root, probe

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  ..." (proprietary) or
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  ..." (open modules).
_KERNEL_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")
_LIBRARY_VERSION = re.compile(r"^libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class Verdict:
    ready: bool
    summary: str  # one line for the log and the readiness body
    problems: tuple[str, ...] = ()  # what to do, one sentence each


def kernel_version(text: str) -> str | None:
    found = _KERNEL_VERSION.search(text)
    return found.group(1) if found else None


def library_version(path: PurePath) -> str | None:
    """The driver version in the real file name of libnvidia-ml (links already followed)."""
    found = _LIBRARY_VERSION.match(path.name)
    return found.group(1) if found else None


def validate(tree: DriverTree, host_root: str, kernel: KernelDriver) -> Verdict:
    root = normalise_root(host_root)
    found = probe(tree, host_root)
    files = found.files
    if files is None:
        return Verdict(False, f"driver root {root}: driver files missing", tuple(hints(found, host_root)))
    if kernel.version_text is None:
        return Verdict(
            False,
            "the nvidia kernel module is not loaded",
            (
                "/proc/driver/nvidia/version does not exist: the nvidia kernel module is not loaded. "
                "Load it (modprobe nvidia) or, with a driver container, wait until it has built and "
                "loaded the module.",
            ),
        )
    loaded = kernel_version(kernel.version_text)
    installed = library_version(files.nvml_library)
    if loaded is not None and installed is not None and loaded != installed:
        return Verdict(
            False,
            f"kernel module {loaded} but {NVML_LIBRARY} {installed}",
            (
                f"The loaded nvidia kernel module is {loaded} while the driver root holds the {installed} "
                "libraries: the driver was upgraded without reloading the module, and every NVML call fails "
                "with 'Driver/library version mismatch'. Reboot the node (or unload and reload the nvidia "
                "modules once no process uses a GPU).",
            ),
        )
    if not kernel.gpus:
        return Verdict(
            False,
            "the nvidia kernel module drives no GPU",
            (
                "/proc/driver/nvidia/gpus is empty: the module is loaded but no card is bound to it. "
                "The cards may be bound to another driver (vfio-pci for virtual machines) or failed "
                "to initialise; check `dmesg | grep -i nvrm` on the node.",
            ),
        )
    version = loaded or installed or "of unknown version"
    count = len(kernel.gpus)
    return Verdict(True, f"driver {version} ready under {root}, {count} GPU{'s' if count != 1 else ''}")
