# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import threading
import time

import pytest

from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop


class Recorder:
    def __init__(self, outcomes: list[PassOutcome]) -> None:
        self.outcomes = outcomes
        self.calls: list[list[Trigger]] = []
        self.done = threading.Event()

    def __call__(self, triggers: list[Trigger]) -> PassOutcome:
        self.calls.append(triggers)
        outcome = self.outcomes.pop(0) if self.outcomes else PassOutcome(True, 3600)
        if not self.outcomes:
            self.done.set()
        return outcome


def run_loop(recorder: Recorder, timing: LoopTiming) -> tuple[TriggerLoop, threading.Event, threading.Thread]:
    loop = TriggerLoop(recorder, HealthState(), SystemClock(), timing)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    return loop, stop, thread


def test_backoff_grows_and_is_capped():
    # draw 0: the top of each jittered step.
    loop = TriggerLoop(Recorder([]), HealthState(), SystemClock(), LoopTiming(0.0, 1, 5), draw=lambda: 0.0)
    delays = [loop._next_delay(PassOutcome(False, 99)) for _ in range(5)]
    assert delays == [1, 2, 4, 5, 5]
    assert loop._next_delay(PassOutcome(True, 42)) == 42
    assert loop._next_delay(PassOutcome(False, 99)) == 1  # a success resets the backoff


def test_backoff_is_jittered_into_the_upper_half_of_each_step():
    draws = iter([0.999, 0.5, 0.0])
    loop = TriggerLoop(
        Recorder([]), HealthState(), SystemClock(), LoopTiming(0.0, 2, 60), draw=lambda: next(draws)
    )
    delays = [loop._next_delay(PassOutcome(False, 99)) for _ in range(3)]
    assert delays == pytest.approx([1.001, 3.0, 8.0])


def test_a_failed_pass_waits_at_least_the_servers_retry_after_capped():
    loop = TriggerLoop(Recorder([]), HealthState(), SystemClock(), LoopTiming(0.0, 1, 30), draw=lambda: 0.0)
    assert loop._next_delay(PassOutcome(False, 99, retry_after=7.0)) == 7.0
    assert loop._next_delay(PassOutcome(False, 99, retry_after=3600.0)) == 10.0  # RETRY_AFTER_CAP_SECONDS


def test_a_burst_of_triggers_makes_one_pass_and_failed_triggers_are_kept():
    recorder = Recorder([PassOutcome(True, 3600), PassOutcome(False, 3600, "boom"), PassOutcome(True, 3600)])
    loop, stop, _ = run_loop(recorder, LoopTiming(debounce_seconds=0.05, backoff_initial_seconds=0.05))
    deadline = time.monotonic() + 2
    while len(recorder.calls) < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    for index in range(3):
        loop.notify(Trigger("udev", str(index), removed_address=f"0000:0{index}:00.0"))
    assert recorder.done.wait(2)
    stop.set()
    loop.wake()
    assert recorder.calls[0] == []  # the start pass
    assert [t.detail for t in recorder.calls[1]] == ["0", "1", "2"]
    assert recorder.calls[2] == recorder.calls[1]  # the failed pass's triggers come back
    assert loop.health.snapshot().ok


def test_wake_stops_a_waiting_loop_promptly():
    recorder = Recorder([])
    loop, stop, thread = run_loop(recorder, LoopTiming())
    time.sleep(0.05)
    stop.set()
    loop.wake()
    thread.join(timeout=1)
    assert not thread.is_alive()


def test_serve_leaves_a_pass_stuck_on_the_api_after_its_grace():
    # A pass blocked in a request to a silent API server (it would last the client's 30 s read
    # timeout): the stop waits for it no longer than the grace, then says it left it.
    entered, release = threading.Event(), threading.Event()

    def stuck(_: list[Trigger]) -> PassOutcome:
        entered.set()
        release.wait(60)
        return PassOutcome(True, 3600)

    loop = TriggerLoop(stuck, HealthState(), SystemClock(), LoopTiming())
    stop = threading.Event()

    def stop_once_inside() -> None:
        entered.wait(10)
        stop.set()

    threading.Thread(target=stop_once_inside, daemon=True).start()
    assert loop.serve(stop, grace_seconds=0.2) is False
    release.set()


def test_serve_returns_at_once_when_stopped_before_any_pass():
    finished = []

    def quick(_: list[Trigger]) -> PassOutcome:
        time.sleep(0.05)
        finished.append(True)
        return PassOutcome(True, 3600)

    loop = TriggerLoop(quick, HealthState(), SystemClock(), LoopTiming())
    stop = threading.Event()
    stop.set()  # set before the first pass: run() does none, serve returns at once
    assert loop.serve(stop, grace_seconds=5) is True
    assert finished == []
