# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Soak of the kubelet plugin: GPU_SOAK_CYCLES (default 10,000) prepare/unprepare cycles of mixed
claims on one simulated node (testkit/soak.py), and the drift of what the process and the node
hold from the first snapshot (after a warm-up) to the last. Files, descriptors, threads, the
checkpoint and the API objects must end where they started; resident memory may grow by what the
allocator's and the interpreter's caches keep. ``GPU_SOAK_CYCLES=500 make bench`` is a short run.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from testkit.soak import soak

CYCLES = int(os.environ.get("GPU_SOAK_CYCLES", "10000"))
UNITS = {"rss_mib": "MiB", "checkpoint_bytes": "bytes"}


def run() -> None:
    print(f"soak: {CYCLES} prepare/unprepare cycles of two mixed claims (GPU_SOAK_CYCLES)")
    with tempfile.TemporaryDirectory(prefix="gpu-bench-soak-") as tmp:
        result = soak(Path(tmp), CYCLES)
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(result.kinds.items()))
    print(f"  claims prepared and unprepared: {kinds}")
    print(f"  {result.seconds:.1f} s, {result.seconds / CYCLES * 1000:.1f} ms per cycle")
    start, end, drift = asdict(result.start), asdict(result.end), result.drift()
    # Descriptors and threads are sets: their count here, their drift the new ones still open.
    start = {key: len(value) if isinstance(value, frozenset) else value for key, value in start.items()}
    end = {key: len(value) if isinstance(value, frozenset) else value for key, value in end.items()}
    print(f"  {'':<24} {'start':>10} {'end':>10} {'drift':>10}")
    for key in start:
        unit = UNITS.get(key, "")
        print(f"  {key:<24} {start[key]:>10} {end[key]:>10} {drift[key]:>+10} {unit}")
    print(f"  resident MiB after each tenth of the cycles: {' '.join(map(str, result.rss_trend))}")
