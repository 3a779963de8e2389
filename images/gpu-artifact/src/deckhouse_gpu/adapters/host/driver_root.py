# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The NVIDIA driver root as mounted into gpu-handler's pod, read the way a chroot would see it.

The pod mounts the host's driver root (``/`` or ``/run/nvidia/driver``) at ``/driver-root``.
Links inside it were written for that root, not for the container: ``usr/lib64/libnvidia-ml.so.1
-> /usr/lib64/libnvidia-ml.so.580.95.05`` means ``/driver-root/usr/lib64/...`` here, and the
container's own ``/usr/lib64`` has nothing to do with it. So links are followed one component
at a time, absolute targets restart at the mount, and ``..`` never climbs out of it.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections import deque
from pathlib import Path, PurePosixPath

from deckhouse_gpu.ports.driver_files import KernelDriver

_MAX_LINKS = 40  # what Linux allows in one path walk before ELOOP


class MountedDriverRoot:
    """Implements ``services.prestart.DriverTree`` over a real directory."""

    def __init__(self, mount: Path | str) -> None:
        self.mount = Path(mount)

    def resolve(self, relative: str) -> PurePosixPath | None:
        """Where ``relative`` leads inside the root once every link is followed; None if nowhere."""
        pending = deque(part for part in PurePosixPath(relative).parts if part != "/")
        walked: list[str] = []
        links = 0
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if walked:
                    walked.pop()
                continue
            try:
                target = os.readlink(self.mount.joinpath(*walked, part))
            except OSError as error:
                if error.errno == errno.EINVAL:  # exists and is not a link
                    walked.append(part)
                    continue
                return None  # missing, a file used as a directory, or unreadable
            links += 1
            if links > _MAX_LINKS:
                return None
            target_path = PurePosixPath(target)
            if target_path.is_absolute():
                walked = []  # absolute targets are absolute in the driver root
            pending.extendleft(reversed([p for p in target_path.parts if p != "/"]))
        return PurePosixPath("/", *walked)

    def find_file(self, relative: str) -> Path | None:
        """The container path of the regular file ``relative`` names in the root, links followed."""
        inside = self.resolve(relative)
        if inside is None:
            return None
        path = self.mount.joinpath(*inside.parts[1:])
        try:
            return path if stat.S_ISREG(os.stat(path).st_mode) else None
        except OSError:
            return None

    def entries(self) -> list[str] | None:
        """Top-level names in the root; None when it is missing or unreadable."""
        try:
            return sorted(os.listdir(self.mount))
        except OSError:
            return None


def run_nvidia_smi(nvidia_smi: Path, nvml_library: Path, timeout_s: float = 60.0) -> str | None:
    """Runs nvidia-smi against the found library; None when it succeeds, else what went wrong.

    The environment is only ``LD_PRELOAD``, as NVIDIA's prestart does: nvidia-smi dlopens
    libnvidia-ml.so.1 by name, which the container's loader would not find under the driver root.
    """
    try:
        result = subprocess.run(
            [str(nvidia_smi)],
            env={"LD_PRELOAD": str(nvml_library)},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"nvidia-smi did not finish in {timeout_s:g} s"
    except OSError as error:
        return f"cannot run {nvidia_smi}: {error.strerror or error}"
    if result.returncode == 0:
        return None
    # nvidia-smi says why on stdout ("NVIDIA-SMI has failed because ..."); stderr may hold loader noise.
    output = (result.stdout.strip() or result.stderr.strip()).splitlines()
    return f"nvidia-smi exited with code {result.returncode}" + (f": {output[-1]}" if output else "")


class ProcNvidia:
    """Implements ``services.driver_validation.KernelView`` over ``<proc>/driver/nvidia``.

    A container's /proc shows the host kernel's driver files, so no host mount is needed.
    """

    def __init__(self, proc: Path | str = "/proc") -> None:
        self.base = Path(proc) / "driver" / "nvidia"

    def nvidia_module(self) -> KernelDriver:
        try:
            text: str | None = (self.base / "version").read_text(errors="replace")
        except OSError:
            text = None
        try:
            gpus = tuple(sorted(os.listdir(self.base / "gpus")))
        except OSError:
            gpus = ()
        return KernelDriver(text, gpus)
