# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler prestart: wait until the driver root holds the NVIDIA driver, and say why it does not.

The handler's init container runs this before anything touches NVML. It looks for ``nvidia-smi``
and ``libnvidia-ml.so.1`` only in the standard directories of the driver root (never a recursive
search: ``/`` is a big tree), retries every few seconds, and every few attempts explains the
usual reasons in words an administrator can act on. The found library is what the handler
later loads NVML from, since the container's own loader path does not reach the driver root.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deckhouse_gpu.domain.prepare.container.driver_layout import BINARY_DIRS, LIBRARY_DIRS
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.driver_files import DriverTree

log = logging.getLogger(__name__)

NVIDIA_SMI = "nvidia-smi"
NVML_LIBRARY = "libnvidia-ml.so.1"
CONTAINERISED_DRIVER_ROOT = "/run/nvidia/driver"  # where driver containers (GPU Operator) install
_LISTED_ENTRIES = 40


@dataclass(frozen=True)
class DriverFiles:
    nvidia_smi: Path
    nvml_library: Path


@dataclass(frozen=True)
class Probe:
    """One look at the driver root."""

    nvidia_smi: Path | None
    nvml_library: Path | None
    entries: tuple[str, ...] | None  # None: the root is missing or unreadable
    containerised_driver_seen: bool = False  # root is "/" but /run/nvidia/driver holds a driver
    verify_failure: str | None = None  # both found, but the driver does not work

    @property
    def files(self) -> DriverFiles | None:
        if self.nvidia_smi is None or self.nvml_library is None:
            return None
        return DriverFiles(self.nvidia_smi, self.nvml_library)


@dataclass(frozen=True)
class PrestartSettings:
    interval_s: float = 10.0
    hint_every: int = 6  # attempts between two rounds of hints; the first attempt always gets them
    max_attempts: int | None = None  # None: wait as long as it takes (the pod stays Init)
    timeout_s: float | None = None


class DriverNotFound(Exception):
    def __init__(self, probe: Probe, attempts: int) -> None:
        super().__init__(f"NVIDIA driver not usable after {attempts} attempts")
        self.probe = probe
        self.attempts = attempts


def normalise_root(host_root: str) -> str:
    return "/" + host_root.strip("/") if host_root.strip("/") else "/"


def find_in(tree: DriverTree, name: str, directories: tuple[str, ...], base: str = "") -> Path | None:
    for directory in directories:
        found = tree.find_file(f"{base.strip('/')}/{directory}/{name}".lstrip("/"))
        if found is not None:
            return found
    return None


def probe(tree: DriverTree, host_root: str) -> Probe:
    root = normalise_root(host_root)
    nvidia_smi = find_in(tree, NVIDIA_SMI, BINARY_DIRS)
    nvml_library = find_in(tree, NVML_LIBRARY, LIBRARY_DIRS)
    entries = tree.entries()
    containerised = False
    if root == "/" and (nvidia_smi is None or nvml_library is None):
        # With "/" mounted, the host's /run/nvidia/driver is visible inside the same tree. Only a
        # hint: its absolute links would be read against "/", so nvidia-smi (a plain file) comes first.
        base = CONTAINERISED_DRIVER_ROOT
        smi = find_in(tree, NVIDIA_SMI, BINARY_DIRS, base)
        containerised = (smi or find_in(tree, NVML_LIBRARY, LIBRARY_DIRS, base)) is not None
    return Probe(nvidia_smi, nvml_library, None if entries is None else tuple(entries), containerised)


def status_line(found: Probe, host_root: str) -> str:
    def where(path: Path | None) -> str:
        return "not found" if path is None else str(path)

    if found.entries is None:
        contents = "is missing or unreadable"
    elif not found.entries:
        contents = "is empty"
    else:
        more = len(found.entries) - _LISTED_ENTRIES
        contents = (
            "contains: "
            + " ".join(found.entries[:_LISTED_ENTRIES])
            + (f" ... ({more} more)" if more > 0 else "")
        )
    line = f"driver root {normalise_root(host_root)}: {NVIDIA_SMI} {where(found.nvidia_smi)}, "
    line += f"{NVML_LIBRARY} {where(found.nvml_library)}; the root {contents}"
    return line + (f"; {found.verify_failure}" if found.verify_failure else "")


def hints(found: Probe, host_root: str) -> list[str]:
    root = normalise_root(host_root)
    if found.verify_failure is not None:
        return [
            f"{NVIDIA_SMI} and {NVML_LIBRARY} are installed under {root} but the driver does not work "
            f"({found.verify_failure}). Usually the nvidia kernel module is not loaded yet, or it does not "
            "match the installed libraries after a driver upgrade: reboot the node or reload the module."
        ]
    wanted = ((NVIDIA_SMI, found.nvidia_smi), (NVML_LIBRARY, found.nvml_library))
    missing = [name for name, path in wanted if path is None]
    lines = [
        f"The NVIDIA driver is not installed under the driver root {root} on the host: "
        f"{' and '.join(missing)} not found. gpu-handler looks for {NVIDIA_SMI} in "
        f"{', '.join(BINARY_DIRS)} and for {NVML_LIBRARY} in {', '.join(LIBRARY_DIRS)} "
        "under that root, and starts once both are there."
    ]
    if len(missing) == 1:
        lines.append(
            f"Only {missing[0]} is missing: the installation is partial (utilities without libraries or the "
            "other way round), or it put that file outside the standard directories listed above."
        )
    if root == "/" and found.containerised_driver_seen:
        lines.append(
            f"{CONTAINERISED_DRIVER_ROOT} on the host holds an NVIDIA driver installed by a driver container "
            "(for example the GPU Operator's). Set the module's driver root (nvidiaDriverRoot) to "
            f"{CONTAINERISED_DRIVER_ROOT} so gpu-handler looks there instead of the host's own directories."
        )
    elif root == "/" and len(missing) == 2:
        lines.append(
            "No driver is installed in the host's standard directories. Install the NVIDIA driver on this "
            "node, or, if a driver container installs it into another directory, set the driver root to it."
        )
    elif root == CONTAINERISED_DRIVER_ROOT and not found.entries:
        lines.append(
            f"{root} is {'empty' if found.entries is not None else 'not there yet'}: the containerised "
            "driver is not installed yet. Its driver container fills this directory after it has built "
            "and loaded the kernel module, which takes several minutes on a new node; if this lasts, "
            "check the driver container's pod on this node."
        )
    elif root != "/" and found.entries is None:
        lines.append(
            f"{root} does not exist on the host or is not mounted into the pod: check the driver root."
        )
    elif root != "/" and not found.entries:
        lines.append(f"{root} is empty on the host: nothing has installed a driver there yet.")
    elif root != "/":
        lines.append(
            f"{root} is not empty but holds no complete driver: check that the driver root is the top of a "
            "driver installation (the directory with usr/ and lib/ in it), not one of its subdirectories."
        )
    return lines


def wait_for_driver(
    tree: DriverTree,
    host_root: str,
    settings: PrestartSettings,
    *,
    clock: Clock,
    sleep: Callable[[float], None],
    emit: Callable[[str], None] = log.info,
    verify: Callable[[DriverFiles], str | None] | None = None,
) -> DriverFiles:
    """Probes until both files are found (and ``verify`` passes); raises DriverNotFound at the limit."""
    started = clock.monotonic()
    attempt = 0
    while True:
        attempt += 1
        found = probe(tree, host_root)
        files = found.files
        if files is not None and verify is not None:
            failure = verify(files)
            found = Probe(found.nvidia_smi, found.nvml_library, found.entries, verify_failure=failure)
        emit(f"attempt {attempt}: {status_line(found, host_root)}")
        if files is not None and found.verify_failure is None:
            emit(f"NVIDIA driver found: {NVML_LIBRARY} at {files.nvml_library}")
            return files
        out_of_attempts = settings.max_attempts is not None and attempt >= settings.max_attempts
        elapsed = clock.monotonic() - started
        # Give up when the next attempt would start past the deadline.
        out_of_time = settings.timeout_s is not None and elapsed + settings.interval_s > settings.timeout_s
        if (attempt - 1) % max(settings.hint_every, 1) == 0 or out_of_attempts or out_of_time:
            for line in hints(found, host_root):
                emit(f"hint: {line}")
        if out_of_attempts or out_of_time:
            raise DriverNotFound(found, attempt)
        sleep(settings.interval_s)
