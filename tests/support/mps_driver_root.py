# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A driver root with a stand-in MPS control daemon, for the launcher's and gpu-mps-daemon's tests."""

from __future__ import annotations

import stat
from pathlib import Path

from deckhouse_gpu.simulator.host.driver_tree import link, write

LIB = "usr/lib/x86_64-linux-gnu"


def executable(path: Path, text: str) -> Path:
    write(path, text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def driver_root(root: Path, answer: str = "100.0", code: int = 0) -> Path:
    """A Debian-style driver root: binaries in usr/bin, libraries as soname links to versioned files.
    The control stand-in records its stdin, argv and environment next to the root."""
    record = root.parent / "record"
    executable(
        root / "usr/bin/nvidia-cuda-mps-control",
        "#!/bin/sh\n"
        "read -r command\n"
        f"printf 'argv=%s\\n' \"$*\" > '{record}'\n"
        f"printf 'command=%s\\n' \"$command\" >> '{record}'\n"
        f'printf \'LD_PRELOAD=%s\\nPATH=%s\\nCUDA_VISIBLE_DEVICES=%s\\n\' "$LD_PRELOAD" "$PATH" '
        f"\"$CUDA_VISIBLE_DEVICES\" >> '{record}'\n"
        f"printf '%s\\n' '{answer}'\n"
        f"exit {code}\n",
    )
    executable(root / "usr/bin/nvidia-cuda-mps-server", "#!/bin/sh\nexit 0\n")
    for soname, version in (
        ("libcuda.so.1", "libcuda.so.580.95.05"),
        ("libnvidia-ml.so.1", "libnvidia-ml.so.580.95.05"),
    ):
        write(root / LIB / version)
        link(root / LIB / soname, version)
    return root


def recorded(root: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (root.parent / "record").read_text().splitlines())
