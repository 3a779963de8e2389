# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A short soak of the kubelet plugin (testkit/soak.py; ``make bench`` runs 10,000 cycles): after a
warm-up long enough for the in-memory API server's bounded history of changes to fill, 160 cycles
of two mixed claims on a simulated node, a whole card, a MIG instance, an MPS share and a
time-slicing share each prepared and unprepared 80 times. Nothing may be left behind: no open file,
thread, CDI spec, plugin file, checkpoint entry, claim or MPS daemon Pod more than after the
warm-up, and resident memory grows by little (docs/RELIABILITY.md: about 130 bytes a claim, which
CPython 3.12's pathlib keeps).

The soak runs in a process of its own, as ``make bench`` runs it: resident memory is the whole
process's, and threads other tests left behind in this one would allocate into it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CYCLES = 160
WARMUP = 150  # about 7 API changes a cycle: the history of 1000 is full by then
RSS_GROWTH_MIB = 2.0  # 320 claims: a leak of 7 kB a claim or more fails
SOAK = """
import json, sys
from pathlib import Path
from testkit.soak import soak
result = soak(Path(sys.argv[1]), int(sys.argv[2]), warmup=int(sys.argv[3]))
print(json.dumps({"kinds": result.kinds, "drift": result.drift(), "trend": result.rss_trend}))
"""


def test_prepare_and_unprepare_leave_nothing_behind(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", SOAK, str(tmp_path), str(CYCLES), str(WARMUP)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        timeout=600,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["kinds"] == {"whole": 80, "MIG": 80, "MPS share": 80, "time-slicing share": 80}
    drift = result["drift"]
    assert {key: value for key, value in drift.items() if key != "rss_mib" and value} == {}
    assert drift["rss_mib"] < RSS_GROWTH_MIB, result["trend"]
