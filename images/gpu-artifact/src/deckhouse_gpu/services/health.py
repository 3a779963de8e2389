"""What the health endpoint reports: whether the last inventory pass succeeded, and when."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class HealthSnapshot:
    synced: bool  # at least one pass has finished
    ok: bool  # the last pass succeeded
    last_error: str | None
    last_sync_monotonic: float | None
    consecutive_failures: int


class HealthState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = HealthSnapshot(False, False, None, None, 0)

    def record(self, ok: bool, error: str | None, at: float) -> None:
        with self._lock:
            failures = 0 if ok else self._snapshot.consecutive_failures + 1
            self._snapshot = HealthSnapshot(True, ok, None if ok else error, at, failures)

    def snapshot(self) -> HealthSnapshot:
        with self._lock:
            return self._snapshot
