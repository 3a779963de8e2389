# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-node work queue: debounce, no concurrent runs of one key, per-key backoff."""

import threading

from deckhouse_gpu.services.runtime.work_queue import WorkQueue


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_events_before_the_key_is_due_fold_into_one_run():
    clock = Ticks()
    queue = WorkQueue(clock)
    queue.add("w1", 0.1)
    queue.add("w1", 0.1)
    queue.add("w1", 0.5)
    assert queue.get(timeout=0) is None  # not due yet
    clock.now = 0.1
    assert queue.get(timeout=0) == "w1"
    queue.done("w1")
    clock.now = 1.0
    assert queue.get(timeout=0) is None
    assert queue.idle()


def test_earlier_add_wins():
    clock = Ticks()
    queue = WorkQueue(clock)
    queue.add("w1", 5.0)
    queue.add("w1", 0.0)
    assert queue.get(timeout=0) == "w1"


def test_key_added_while_processing_runs_again_after_done_only():
    clock = Ticks()
    queue = WorkQueue(clock)
    queue.add("w1")
    assert queue.get(timeout=0) == "w1"
    queue.add("w1")
    assert queue.get(timeout=0) is None  # never handed to a second worker at once
    assert not queue.idle()
    queue.done("w1")
    assert queue.get(timeout=0) == "w1"


def test_keys_come_out_in_due_order():
    clock = Ticks()
    queue = WorkQueue(clock)
    queue.add("late", 2.0)
    queue.add("soon", 1.0)
    queue.add("now")
    clock.now = 5.0
    assert [queue.get(timeout=0) for _ in range(3)] == ["now", "soon", "late"]


def test_backoff_doubles_per_key_and_resets_on_success():
    queue = WorkQueue(Ticks(), backoff_initial=0.5, backoff_max=3.0, draw=lambda: 0.0)  # no jitter
    assert [queue.retry("w1") for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert queue.retry("w2") == 0.5  # one broken node does not slow another
    queue.forget("w1")
    assert queue.retry("w1") == 0.5


def test_backoff_is_jittered_within_the_upper_half_and_waits_for_retry_after():
    draws = iter([1.0, 0.5, 0.0])
    queue = WorkQueue(Ticks(), backoff_initial=1.0, backoff_max=8.0, draw=lambda: next(draws))
    # Steps 1, 2, 4 s, each drawn from [step / 2, step]: nodes that failed together spread out.
    assert [queue.retry("w1") for _ in range(3)] == [0.5, 1.5, 4.0]
    assert WorkQueue(Ticks(), draw=lambda: 1.0).retry("w1", retry_after=7.0) == 7.0


def test_close_wakes_a_waiting_worker():
    queue = WorkQueue()
    got: list[str | None] = ["unset"]
    worker = threading.Thread(target=lambda: got.__setitem__(0, queue.get()))
    worker.start()
    queue.close()
    worker.join(2)
    assert not worker.is_alive()
    assert got == [None]


def test_waiting_worker_wakes_when_a_key_becomes_due():
    queue = WorkQueue()
    queue.add("w1", 0.05)
    assert queue.get(timeout=2) == "w1"
