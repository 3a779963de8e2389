# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A component's liveness as its health endpoints report it: whether its last pass succeeded, and
since when it has been failing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HealthSnapshot:
    synced: bool  # at least one pass has finished
    ok: bool  # the last pass succeeded
    last_error: str | None
    last_sync_monotonic: float | None
    consecutive_failures: int
    failing_since: float | None = None  # when the current run of failed passes began
