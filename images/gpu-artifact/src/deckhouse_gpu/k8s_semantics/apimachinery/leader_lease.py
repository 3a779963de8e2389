# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it, without the I/O.

Expiry is judged by the candidate's own monotonic clock, from when it last saw the lease
record change, never by comparing ``renewTime`` with its wall clock: replicas' clocks may
disagree, their rates do not (much). The holder stops working ``renew_deadline`` after the
start of its last successful renewal, which is earlier than any other candidate can see
the lease expire (``lease_duration`` after it saw that renewal), so two leaders never work
at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class LeaseTimings:
    lease_duration: float = 15.0  # how long others wait after the last renewal they saw
    renew_deadline: float = 10.0  # the holder stops working when it could not renew for this long
    retry_period: float = 2.0  # how often candidates try and the holder renews

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("leader election needs 0 < retry period < renew deadline < lease duration")

    @property
    def duration_seconds(self) -> int:
        """What the Lease says (an integer field): rounded up, so others never wait less than us."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True)
class LeaseRecord:
    holder: str | None
    duration_seconds: int | None
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        duration = spec.get("leaseDurationSeconds")
        return cls(
            holder=spec.get("holderIdentity") or None,
            duration_seconds=duration if isinstance(duration, int) and duration > 0 else None,
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        """The Lease spec as a merge patch: a released lease has its holder removed (null)."""
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


@dataclass(frozen=True)
class Observation:
    record: LeaseRecord
    seen_at: float  # this candidate's monotonic time when the record last changed


class Action(Enum):
    WAIT = "wait"  # somebody else holds a live lease: never steal it
    ACQUIRE = "acquire"  # free, released or expired
    RENEW = "renew"  # ours


def observe(previous: Observation | None, record: LeaseRecord, now: float) -> Observation:
    """A record that changed restarts the expiry countdown; an unchanged one keeps it running."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def decide(seen: Observation, identity: str, now: float, timings: LeaseTimings) -> Action:
    record = seen.record
    if record.holder == identity:
        return Action.RENEW
    if record.holder is None:
        return Action.ACQUIRE
    # The holder's own promise wins when it is longer than ours: a replica of another version
    # may run with longer timings.
    duration = max(record.duration_seconds or 0, timings.lease_duration)
    return Action.WAIT if now < seen.seen_at + duration else Action.ACQUIRE


def claimed(
    current: LeaseRecord | None, identity: str, action: Action, stamp: str, timings: LeaseTimings
) -> LeaseRecord:
    """The record to write for ``action`` (ACQUIRE or RENEW); ``stamp`` is now as a MicroTime."""
    if action is Action.RENEW and current is not None:
        return replace(current, duration_seconds=timings.duration_seconds, renew_time=stamp)
    transitions = current.transitions if current is not None else 0
    if current is not None and current.holder not in (None, identity):
        transitions += 1
    return LeaseRecord(identity, timings.duration_seconds, stamp, stamp, transitions)


def released(current: LeaseRecord, stamp: str) -> LeaseRecord:
    """What a stopping holder writes so that a follower takes over at once, as client-go does."""
    return LeaseRecord(None, 1, stamp, stamp, current.transitions)
