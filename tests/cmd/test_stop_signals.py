# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""SIGTERM can never deadlock a component (cmd/process.py, DESIGN.md D18).

A Python signal handler runs on the main thread between two bytecodes, possibly inside a
``with lock:`` of the code it interrupted; a handler that takes the same lock (``Queue.put``,
``Event.set``) then waits for itself forever. These tests send the signals for real, to child
processes, so a hang is a timeout here and never a hung test run.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Far beyond what a stop takes (milliseconds): the bound only tells a hang from a slow machine.
NO_HANG_SECONDS = 20.0
ROUNDS = int(os.environ.get("STOP_SIGNAL_ROUNDS", "2000"))

HOLDS_THE_LOCK = """
import os, signal, threading, time
from deckhouse_gpu.cmd.process import stop_on_signals

lock = threading.Lock()
woken_on = []
woken = threading.Event()

def wake():
    with lock:  # what Queue.put does: the lock the main thread holds below
        woken_on.append(threading.current_thread().name)
    woken.set()

stop = threading.Event()
stop_on_signals(stop, wake)
with lock:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.3)  # the handler runs here, on this thread, inside the lock
print("stopped" if stop.wait(10) and woken.wait(10) else "not stopped", woken_on, flush=True)
"""


def _env() -> dict[str, str]:
    paths = [str(REPO / "images/gpu-artifact/src"), str(REPO)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_sigterm_while_the_main_thread_holds_the_wake_lock_stops_the_process():
    done = subprocess.run(
        [sys.executable, "-c", HOLDS_THE_LOCK],
        capture_output=True, text=True, timeout=NO_HANG_SECONDS, env=_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Woken from the relay thread, after the main thread let go of the lock.
    assert done.stdout.strip() == "stopped ['signals']"


def test_thousands_of_sigterms_to_a_busy_work_loop_each_stop_it():
    child = subprocess.Popen(
        [sys.executable, "-m", "testkit.signal_storm", "--loop-rounds", str(ROUNDS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO,
    )  # fmt: skip
    assert child.stdout is not None
    slowest = 0.0
    try:
        assert _line(child, NO_HANG_SECONDS * 3) == "ready"  # the import takes seconds on a busy machine
        for number in range(1, ROUNDS + 1):
            sent = time.monotonic()
            child.send_signal(15)
            line = _line(child, NO_HANG_SECONDS)
            assert line == f"stopped {number}", f"SIGTERM {number} of {ROUNDS}: {line!r}"
            slowest = max(slowest, time.monotonic() - sent)
        child.stdout.close()
        assert child.wait(NO_HANG_SECONDS) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    print(f"{ROUNDS} SIGTERMs, each stopped the loop; slowest stop {slowest * 1000:.1f} ms")


def _line(child: subprocess.Popen[str], timeout: float) -> str:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], timeout)
    if not ready:
        child.kill()
        _, stderr = child.communicate()
        raise AssertionError(f"no answer within {timeout} s (a hang); its stderr: {stderr[-2000:]}")
    return child.stdout.readline().strip()
