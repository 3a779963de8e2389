# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The host's driver files as the driver checks read them: the driver root's tree and what the
loaded kernel module says in /proc/driver/nvidia (adapters/driver_root implements both)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class DriverTree(Protocol):
    """The driver root as mounted in the container; paths are relative to the root."""

    def find_file(self, relative: str) -> Path | None:
        """Container path of the regular file, links resolved inside the root; None if absent."""
        ...

    def entries(self) -> list[str] | None:
        """Top-level names of the root; None when it is missing or unreadable."""
        ...


@dataclass(frozen=True)
class KernelDriver:
    """What ``/proc/driver/nvidia`` says about the loaded kernel module."""

    version_text: str | None  # None: the module is not loaded (the file is missing)
    gpus: tuple[str, ...]  # PCI addresses the module drives


class KernelView(Protocol):
    def nvidia_module(self) -> KernelDriver: ...
