# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every long-running component stops cleanly on SIGTERM at a random moment, while the API server
churns, refuses, hangs or answers 503 (testkit/signal_storm.py runs the trials).

A clean stop: exit status 0 and ``stopped`` as the last log line, within a bound far below the
kubelet's 30 s grace period (a hang, not a timing: the measured times are printed, and
``make sigterm-storm`` runs thousands of trials and reports them). The seed is printed; replay
with ``SIGNAL_STORM_SEED``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testkit.signal_storm import COMPONENTS

REPO = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("SIGNAL_STORM_TRIALS", "4"))  # one per shape of the API server
NO_HANG_SECONDS = 10.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the signal mask from /proc")
@pytest.mark.parametrize("component", COMPONENTS)
def test_sigterm_at_random_moments_always_stops_cleanly(component):
    # Short: the kubelet plugin's socket path under the host root must fit in 107 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="storm-", dir="/tmp"))
    try:
        _storm(component, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _storm(component: str, workdir: Path) -> None:
    seed = int(os.environ.get("SIGNAL_STORM_SEED", random.randrange(1 << 30)))  # noqa: S311
    argv = [sys.executable, "-m", "testkit.signal_storm", "--component", component, "--trials", str(TRIALS),
            "--seed", str(seed), "--workdir", str(workdir), "--bound", str(NO_HANG_SECONDS)]  # fmt: skip
    paths = os.pathsep.join([str(REPO / "images/gpu-artifact/src"), str(REPO)])
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": paths},
        timeout=TRIALS * (NO_HANG_SECONDS * 3 + 5) + 60, check=False,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    trials = [line for line in lines if "summary" not in line]
    summary = next((line["summary"] for line in lines if "summary" in line), None)
    replay = f"replay: SIGNAL_STORM_SEED={seed} SIGNAL_STORM_TRIALS={TRIALS}"
    assert summary is not None, f"{replay}\n{done.stderr[-3000:]}"
    print(json.dumps(summary))
    unclean = [t for t in trials if not t["clean"]]
    logs = "\n".join(f"{t}\n{Path(t['log']).read_text()[-3000:]}" for t in unclean[:2] if "log" in t)
    assert not unclean, f"{replay}\n{logs}"
    assert summary["trials"] == TRIALS
    assert done.returncode == 0
    # An API server that answers (or refuses at once) lets every component start: SIGTERM then
    # meets its handler. Only a silent one may hold a start-up past the bound (the default action
    # then ends the process, as it should before the handler exists).
    assert all(t["caught"] for t in trials if t["mode"] != "blackhole"), replay
