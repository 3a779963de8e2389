# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""An event-driven work loop: a pass at start, then a pass per burst of triggers.

Shared by the node components. Triggers arriving within ``debounce_seconds`` of each other
make one pass; after a failed pass the next one comes with exponential backoff and jitter;
otherwise the pass itself says when it wants to run again (a recheck, a retry, a heartbeat or a
resync).
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from deckhouse_gpu.domain.backoff import Backoff
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.services.runtime.health import HealthState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trigger:
    source: str  # "udev", "watch", "stop", ...
    detail: str = ""
    removed_address: str | None = None


@dataclass(frozen=True)
class PassOutcome:
    ok: bool
    next_delay: float  # seconds until the pass wants to run again, if nothing triggers it
    error: str | None = None
    log_fields: dict[str, object] = field(default_factory=dict)
    retry_after: float | None = None  # the API server's Retry-After, when a throttled call failed it


@dataclass(frozen=True)
class LoopTiming:
    debounce_seconds: float = 0.1
    backoff_initial_seconds: float = 0.5
    # Failed passes retry after an exponential, jittered delay (domain/backoff.py): every node's
    # component failing together (an API server restart) comes back spread out, within 30 s.
    backoff_max_seconds: float = 30.0


class TriggerLoop:
    def __init__(
        self,
        run_pass: Callable[[list[Trigger]], PassOutcome],
        health: HealthState,
        clock: Clock,
        timing: LoopTiming,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._run_pass = run_pass
        self.health = health
        self.clock = clock
        self.timing = timing
        self._triggers: queue.Queue[Trigger] = queue.Queue()
        self._failures = 0  # failed passes in a row
        self._draw = draw
        self._busy = True  # until the first pass has finished

    def idle(self) -> bool:
        """No pass running and none requested: what the simulator waits for between steps."""
        return not self._busy and self._triggers.empty()

    def notify(self, trigger: Trigger) -> None:
        """Thread-safe: called by watches and monitors. Never from a signal handler: it takes the
        queue's lock, which the interrupted thread may hold (cmd/process.py)."""
        self._triggers.put(trigger)

    def wake(self) -> None:
        """Makes a loop waiting for triggers look at its stop event now (used on SIGTERM)."""
        self.notify(Trigger("stop"))

    def serve(self, stop: threading.Event, grace_seconds: float) -> bool:
        """``run`` in a thread of its own until ``stop``, then waits at most ``grace_seconds`` for
        the pass in flight: a pass blocked on an API server that does not answer would hold the
        process for the client's whole read timeout, past the kubelet's grace period. A pass is
        level-triggered, so the next process redoes what this one left. False if it was left."""
        worker = threading.Thread(target=self.run, args=(stop,), name="work-loop", daemon=True)
        worker.start()
        stop.wait()
        worker.join(grace_seconds)
        if worker.is_alive():
            log.warning("stopping with a pass in flight", extra={"graceSeconds": grace_seconds})
            return False
        return True

    def run(self, stop: threading.Event) -> None:
        pending: list[Trigger] = []
        delay = 0.0  # the first pass runs at once
        while not stop.is_set():
            if not self._wait(delay, pending, stop):
                continue
            self._busy = True
            outcome = self.run_once(pending)
            if outcome.ok:
                pending = []  # after a failed pass the triggers still matter
            delay = self._next_delay(outcome)
            self._busy = False

    def run_once(self, triggers: list[Trigger] | None = None) -> PassOutcome:
        outcome = self._run_pass(list(triggers or []))
        self.health.record(outcome.ok, outcome.error, self.clock.monotonic())
        if outcome.ok:
            log.info("pass done", extra=outcome.log_fields)
        else:
            log.warning("pass failed", extra={**outcome.log_fields, "error": outcome.error})
        return outcome

    def _wait(self, delay: float, pending: list[Trigger], stop: threading.Event) -> bool:
        """Waits for a trigger or the delay; True when a pass should run now."""
        try:
            trigger = self._triggers.get(timeout=delay) if delay > 0 else None
        except queue.Empty:
            trigger = None
        if stop.is_set():
            return False
        if trigger is not None:
            self._busy = True
            pending.append(trigger)
            deadline = self.clock.monotonic() + self.timing.debounce_seconds
            while (left := deadline - self.clock.monotonic()) > 0:
                try:
                    pending.append(self._triggers.get(timeout=left))
                except queue.Empty:
                    break
        return True

    def _next_delay(self, outcome: PassOutcome) -> float:
        timing = self.timing
        if not outcome.ok:
            self._failures += 1
            backoff = Backoff(timing.backoff_initial_seconds, timing.backoff_max_seconds)
            return backoff.delay(self._failures, self._draw(), outcome.retry_after)
        self._failures = 0
        return outcome.next_delay
