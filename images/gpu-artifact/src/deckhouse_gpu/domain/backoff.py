# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How long to wait before retrying a failed call to the API server: exponential, capped, jittered,
and never shorter than the server's own ``Retry-After`` (itself capped).

The jitter spreads the retries of many clients that failed together (every node's gpu-handler when
the API server restarts) over the upper half of each step, as client-go's backoff does, so they do
not come back in one wave. The draw is passed in: the caller owns the random source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RETRY_AFTER_CAP_SECONDS = 10.0  # a server asking for longer is asked again after this


@dataclass(frozen=True)
class Backoff:
    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.5  # the delay is drawn from [step * (1 - jitter), step]

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.cap or self.factor < 1 or not 0 <= self.jitter <= 1:
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1 and jitter in [0, 1]")

    def step(self, attempt: int) -> float:
        """The undrawn delay of the ``attempt``-th retry in a row (1 for the first)."""
        exponent = min(max(attempt, 1) - 1, 64)  # 2**64 steps exceed any cap: no overflow
        return float(min(self.cap, self.initial * self.factor**exponent))

    def delay(self, attempt: int, draw: float, retry_after: float | None = None) -> float:
        """``draw`` in [0, 1); ``retry_after``: the server's Retry-After in seconds, if it sent one."""
        jittered = self.step(attempt) * (1.0 - self.jitter * min(max(draw, 0.0), 1.0))
        if retry_after is None:
            return jittered
        return max(jittered, min(retry_after, RETRY_AFTER_CAP_SECONDS))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header; None when absent or not a number of seconds (the API
    server sends seconds; an HTTP date is not worth a clock comparison here)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if not math.isnan(seconds) and seconds >= 0 else None
