# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Lease decisions: acquire when free or expired, renew when held, never steal a live lease."""

import pytest

from deckhouse_gpu.k8s_semantics.apimachinery.leader_lease import (
    Action,
    LeaseRecord,
    LeaseTimings,
    Observation,
    claimed,
    decide,
    observe,
    released,
)

TIMINGS = LeaseTimings()


def held_by(holder: str | None, renew: str = "r1", duration: int | None = 15) -> LeaseRecord:
    return LeaseRecord(holder, duration, "a0", renew, 2)


def test_defaults_are_client_go_s():
    assert (TIMINGS.lease_duration, TIMINGS.renew_deadline, TIMINGS.retry_period) == (15.0, 10.0, 2.0)
    assert TIMINGS.duration_seconds == 15


@pytest.mark.parametrize(
    ("duration", "deadline", "retry"), [(10, 10, 2), (15, 10, 10), (15, 20, 2), (15, 10, 0)]
)
def test_timings_must_leave_the_holder_time_to_stop_first(duration, deadline, retry):
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaseTimings(duration, deadline, retry)


def test_fractional_duration_rounds_up_in_the_lease():
    assert LeaseTimings(0.5, 0.3, 0.1).duration_seconds == 1


def test_own_lease_is_renewed_even_when_old():
    seen = Observation(held_by("me"), seen_at=0.0)
    assert decide(seen, "me", now=1000.0, timings=TIMINGS) is Action.RENEW


def test_released_lease_is_acquired_at_once():
    seen = Observation(held_by(None), seen_at=100.0)
    assert decide(seen, "me", now=100.0, timings=TIMINGS) is Action.ACQUIRE


def test_live_lease_of_another_is_never_stolen():
    seen = Observation(held_by("other"), seen_at=100.0)
    assert decide(seen, "me", now=114.99, timings=TIMINGS) is Action.WAIT
    assert decide(seen, "me", now=115.0, timings=TIMINGS) is Action.ACQUIRE


def test_holder_s_longer_promise_is_respected():
    seen = Observation(held_by("other", duration=60), seen_at=0.0)
    assert decide(seen, "me", now=59.0, timings=TIMINGS) is Action.WAIT
    assert decide(seen, "me", now=60.0, timings=TIMINGS) is Action.ACQUIRE


def test_expiry_counts_from_when_the_record_last_changed_here():
    first = observe(None, held_by("other", renew="r1"), now=0.0)
    unchanged = observe(first, held_by("other", renew="r1"), now=10.0)
    assert unchanged.seen_at == 0.0
    renewed = observe(unchanged, held_by("other", renew="r2"), now=12.0)
    assert renewed.seen_at == 12.0
    assert decide(renewed, "me", now=20.0, timings=TIMINGS) is Action.WAIT
    assert decide(renewed, "me", now=27.0, timings=TIMINGS) is Action.ACQUIRE


def test_acquiring_from_another_counts_a_transition():
    record = claimed(held_by("other"), "me", Action.ACQUIRE, "2026-11-21T12:00:00.000000Z", TIMINGS)
    assert record == LeaseRecord("me", 15, "2026-11-21T12:00:00.000000Z", "2026-11-21T12:00:00.000000Z", 3)


def test_acquiring_a_released_or_new_lease_counts_none():
    assert claimed(held_by(None), "me", Action.ACQUIRE, "t", TIMINGS).transitions == 2
    assert claimed(None, "me", Action.ACQUIRE, "t", TIMINGS).transitions == 0


def test_renewal_moves_only_the_renew_time():
    current = held_by("me")
    renewed = claimed(current, "me", Action.RENEW, "t9", TIMINGS)
    assert renewed == LeaseRecord("me", 15, "a0", "t9", 2)


def test_release_clears_the_holder_and_keeps_the_transitions():
    freed = released(held_by("me"), "t5")
    assert freed.holder is None
    assert freed.transitions == 2
    assert freed.spec()["holderIdentity"] is None  # a merge patch null removes the field


def test_record_round_trips_through_the_lease_spec():
    record = LeaseRecord("me", 15, "a", "r", 4)
    assert LeaseRecord.from_lease({"spec": record.spec()}) == record
    assert LeaseRecord.from_lease({}) == LeaseRecord(None, None, None, None, 0)
