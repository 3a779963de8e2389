# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Time, passed in so the domain and the services can be tested without sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC (for timestamps written to the API)."""
        ...

    def monotonic(self) -> float:
        """Seconds for measuring intervals; unaffected by wall-clock jumps."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
