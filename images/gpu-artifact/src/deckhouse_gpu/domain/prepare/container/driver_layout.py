# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where an NVIDIA driver installation keeps its libraries and binaries, relative to its root.

One list for every reader (prestart looking for NVML and nvidia-smi, the CDI discovery looking
for every driver file), so a distribution layout added here is found by all of them.
"""

from __future__ import annotations

LIBRARY_DIRS = (
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib",
    "lib",
    "usr/local/nvidia/lib64",
)
BINARY_DIRS = ("usr/bin", "usr/sbin", "bin", "sbin", "usr/local/nvidia/bin")
