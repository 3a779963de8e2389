# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the health endpoints report: whether the last inventory pass succeeded, and since when not."""

from __future__ import annotations

import threading

from deckhouse_gpu.domain.liveness import HealthSnapshot


class HealthState:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = HealthSnapshot(False, False, None, None, 0)

    def record(self, ok: bool, error: str | None, at: float) -> None:
        with self._lock:
            previous = self._snapshot
            if ok:
                self._snapshot = HealthSnapshot(True, True, None, at, 0)
            else:
                since = previous.failing_since if previous.failing_since is not None else at
                self._snapshot = HealthSnapshot(
                    True, False, error, at, previous.consecutive_failures + 1, since
                )

    def snapshot(self) -> HealthSnapshot:
        with self._lock:
            return self._snapshot
