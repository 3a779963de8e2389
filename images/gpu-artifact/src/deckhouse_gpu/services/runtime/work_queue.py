# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A keyed work queue with delays and per-key backoff, as client-go's workqueue.

A key is queued at most once however many events name it (the debounce: events arriving
before it is due fold into one run), and it is never handed to two workers at once: a key
added while it is being processed runs again after ``done``. Failed keys come back with
exponential backoff of their own, so one broken node never slows the others.
"""

from __future__ import annotations

import heapq
import random
import threading
import time
from collections.abc import Callable

from deckhouse_gpu.domain.backoff import Backoff


class WorkQueue:
    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        backoff_initial: float = 0.5,
        backoff_max: float = 60.0,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._monotonic = monotonic
        # Jittered (domain/backoff.py): nodes that failed together, as when the API server
        # restarts, are not all retried in the same instant.
        self._backoff = Backoff(backoff_initial, backoff_max)
        self._draw = draw
        self._cond = threading.Condition()
        self._due: dict[str, float] = {}  # queued keys and when they are due
        self._heap: list[tuple[float, str]] = []  # may hold stale entries; _due is the truth
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._closed = False

    def add(self, key: str, delay: float = 0.0) -> None:
        """Queues ``key`` to run after ``delay``; an earlier run already queued is kept."""
        due = self._monotonic() + max(0.0, delay)
        with self._cond:
            if self._closed:
                return
            queued = self._due.get(key)
            if queued is not None and queued <= due:
                return
            self._due[key] = due
            if key not in self._processing:
                heapq.heappush(self._heap, (due, key))
            self._cond.notify()

    def retry(self, key: str, retry_after: float | None = None) -> float:
        """Queues ``key`` again after its backoff, whose step doubles each failure (drawn from the
        upper half of the step, never before the server's ``retry_after``); returns the delay."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
        delay = self._backoff.delay(failures, self._draw(), retry_after)
        self.add(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """The key succeeded: its next failure starts the backoff afresh."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> str | None:
        """The next due key (now owned by the caller until ``done``), or None at timeout or close."""
        deadline = None if timeout is None else self._monotonic() + timeout
        with self._cond:
            while not self._closed:
                now = self._monotonic()
                while self._heap and self._stale(*self._heap[0]):
                    heapq.heappop(self._heap)
                if self._heap and self._heap[0][0] <= now:
                    _, key = heapq.heappop(self._heap)
                    del self._due[key]
                    self._processing.add(key)
                    return key
                waits = [
                    t - now for t in (deadline, self._heap[0][0] if self._heap else None) if t is not None
                ]
                if deadline is not None and deadline <= now:
                    return None
                self._cond.wait(min(waits) if waits else None)
            return None

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._due:  # added again while it ran
                heapq.heappush(self._heap, (self._due[key], key))
                self._cond.notify()

    def idle(self) -> bool:
        """Nothing queued and nothing being processed."""
        with self._cond:
            return not self._due and not self._processing

    def pending(self) -> int:
        with self._cond:
            return len(self._due)

    def close(self) -> None:
        """Wakes every worker waiting in ``get``; they get None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _stale(self, due: float, key: str) -> bool:
        # Superseded by an earlier add, or its key is being processed (``done`` pushes it again).
        return self._due.get(key) != due or key in self._processing
