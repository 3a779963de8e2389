# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The fuzz tests (tests/**/test_*_fuzz.py, docs/RELIABILITY.md) at GPU_FUZZ_BENCH_SCALE times
(default 10) the examples ``make test`` runs: examples passed and failed per target, and the time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCALE = os.environ.get("GPU_FUZZ_BENCH_SCALE", "10")
_TEST = re.compile(r"^(tests/\S+::\S+):$")
_PHASE = re.compile(r"- during \w+ phase \(([\d.]+) seconds\)")
_COUNTS = re.compile(r"- (\d+) passing, (\d+) failing")


def run() -> None:
    print(f"fuzzing: the fuzz tests at {SCALE} times their examples in make test (GPU_FUZZ_BENCH_SCALE)")
    started = time.perf_counter()
    targets = [str(path.relative_to(ROOT)) for path in sorted(ROOT.glob("tests/**/test_*_fuzz.py"))]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
         *targets],
        cwd=ROOT, env={**os.environ, "GPU_FUZZ_SCALE": SCALE}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    figures: dict[str, list[float]] = {}  # test -> [seconds, passing, failing]
    current = None
    for line in done.stdout.splitlines():
        if match := _TEST.match(line.strip()):
            current = match[1].split("/")[-1]
            figures[current] = [0.0, 0, 0]
        elif current and (match := _PHASE.search(line)):
            figures[current][0] += float(match[1])
        elif current and (match := _COUNTS.search(line)):
            figures[current][1] += int(match[1])
            figures[current][2] += int(match[2])
    for name, (seconds, passing, failing) in figures.items():
        print(f"  {name:<86} {int(passing):>7} passed {int(failing):>3} failed {seconds:6.1f} s")
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    print(f"  pytest: {summary} ({time.perf_counter() - started:.0f} s)")
