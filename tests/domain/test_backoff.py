# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Retry delays: exponential, capped, jittered, and the server's Retry-After honoured within a cap."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.backoff import RETRY_AFTER_CAP_SECONDS, Backoff, parse_retry_after


def test_steps_double_up_to_the_cap_and_never_overflow() -> None:
    backoff = Backoff(initial=0.5, cap=30.0)
    assert [backoff.step(n) for n in (1, 2, 3, 7, 8, 10_000)] == [0.5, 1.0, 2.0, 30.0, 30.0, 30.0]


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.5, 0.999])
def test_the_jitter_keeps_each_delay_in_the_upper_half_of_its_step(draw: float) -> None:
    backoff = Backoff(initial=1.0, cap=8.0)
    for attempt in range(1, 6):
        step = backoff.step(attempt)
        assert step / 2 <= backoff.delay(attempt, draw) <= step


def test_retry_after_is_a_floor_and_is_capped() -> None:
    backoff = Backoff(initial=1.0, cap=30.0)
    assert backoff.delay(1, 0.0, retry_after=4.0) == 4.0
    assert backoff.delay(6, 0.0, retry_after=4.0) == 30.0  # a longer own step wins
    assert backoff.delay(1, 0.0, retry_after=10_000.0) == RETRY_AFTER_CAP_SECONDS


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("1", 1.0), (" 2.5 ", 2.5), ("0", 0.0), (None, None), ("-1", None), ("nan", None),
     ("Wed, 21 Oct 2026 07:28:00 GMT", None)],
)  # fmt: skip
def test_retry_after_headers_in_seconds_parse(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


def test_a_backoff_that_cannot_work_is_refused() -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(initial=0.0)
