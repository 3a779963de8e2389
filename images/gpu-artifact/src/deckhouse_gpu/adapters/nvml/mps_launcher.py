# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The driver's MPS control daemon, run from the mounted driver root inside the daemon's Pod.

Why this way and not ``chroot`` or ``LD_LIBRARY_PATH`` is in domain/prepare/mps_pod.py. The
binaries and libraries are found with the link-following lookup of ``MountedDriverRoot`` in the
directories every reader of the driver root uses (``driver_layout``); the control daemon runs on
the image's glibc with the driver's ``libcuda.so.1`` and ``libnvidia-ml.so.1`` preloaded, and
finds ``nvidia-cuda-mps-server`` through ``PATH``, the same way when it starts the server.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.domain.prepare.container.driver_layout import BINARY_DIRS, LIBRARY_DIRS

CONTROL = "nvidia-cuda-mps-control"
SERVER = "nvidia-cuda-mps-server"
LIBRARIES = ("libcuda.so.1", "libnvidia-ml.so.1")


class LaunchError(Exception):
    """The daemon cannot be run or reached; the message says why."""


@dataclass(frozen=True)
class MpsBinaries:
    control: Path
    server: Path
    libraries: tuple[Path, ...]

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` (the Pod's env: CUDA_VISIBLE_DEVICES, the MPS directories) plus what finds the driver."""
        env = dict(base)
        env["PATH"] = os.pathsep.join(p for p in (str(self.server.parent), base.get("PATH", "")) if p)
        env["LD_PRELOAD"] = ":".join(str(library) for library in self.libraries)
        return env


def _find(tree: MountedDriverRoot, name: str, directories: tuple[str, ...]) -> Path | None:
    for directory in directories:
        found = tree.find_file(f"{directory}/{name}")
        if found is not None:
            return found
    return None


def find_binaries(tree: MountedDriverRoot) -> MpsBinaries:
    control = _find(tree, CONTROL, BINARY_DIRS)
    server = _find(tree, SERVER, BINARY_DIRS)
    libraries = [_find(tree, name, LIBRARY_DIRS) for name in LIBRARIES]
    found = {CONTROL: control, SERVER: server, **dict(zip(LIBRARIES, libraries, strict=True))}
    missing = [name for name, path in found.items() if path is None]
    if control is None or server is None or missing:
        raise LaunchError(
            f"{', '.join(missing)} not found under the driver root {tree.mount} (looked in "
            f"{', '.join(BINARY_DIRS)} for binaries and {', '.join(LIBRARY_DIRS)} for libraries): "
            "the driver's MPS part is not installed there"
        )
    if server.name != SERVER:
        # The control daemon starts the server by its name from PATH: a link resolved to a
        # versioned file name would not be found there.
        raise LaunchError(f"{SERVER} under the driver root leads to {server}, which PATH cannot find by name")
    return MpsBinaries(control, server, tuple(p for p in libraries if p is not None))


Exec = Callable[[str, list[str], dict[str, str]], NoReturn]


def exec_daemon(binaries: MpsBinaries, base: Mapping[str, str], execve: Exec = os.execve) -> NoReturn:
    """Becomes ``nvidia-cuda-mps-control -f``: its signals and exit status are the container's."""
    execve(str(binaries.control), [CONTROL, "-f"], binaries.environment(base))


def send(
    binaries: MpsBinaries,
    base: Mapping[str, str],
    command: str,
    timeout_s: float = 8.0,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> str:
    """What ``echo <command> | nvidia-cuda-mps-control`` prints; LaunchError when it fails."""
    try:
        result = run(
            [str(binaries.control)],
            input=f"{command}\n",
            env=binaries.environment(base),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{CONTROL} did not answer {command!r} in {timeout_s:g} s") from None
    except OSError as error:
        raise LaunchError(f"cannot run {binaries.control}: {error.strerror or error}") from error
    output = result.stdout.strip()
    if result.returncode != 0:
        detail = output or "no output"
        if result.stderr.strip():
            detail += f" (stderr: {result.stderr.strip()})"
        raise LaunchError(f"{CONTROL} exited with code {result.returncode} on {command!r}: {detail}")
    return output


def answers(output: str) -> bool:
    """Whether the control daemon answered ``get_default_active_thread_percentage`` (a number);
    without a daemon the client prints why instead, and may still exit 0."""
    try:
        float(output.rsplit(maxsplit=1)[-1])
    except (ValueError, IndexError):
        return False
    return True
