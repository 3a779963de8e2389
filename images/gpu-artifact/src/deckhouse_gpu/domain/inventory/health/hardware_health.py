# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The HardwareHealthy condition: gates, NVML failures, grace period and retry backoff
(DESIGN.md S4.2.2, S4.2.3).

Pure: the handler passes the time in. A failed snapshot does not change the condition until
failures have lasted ``grace_seconds`` (NVML hiccups during driver restarts are common); the
card is retried with growing delays meanwhile and afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.physicalgpu import (
    DRIVER_READY,
    ConditionStatus,
    DriverType,
)

REASON_HEALTHY = "NVMLHealthy"
REASON_NVML_UNAVAILABLE = "NVMLUnavailable"
REASON_QUERY_FAILED = "NVMLQueryFailed"
REASON_DRIVER_NOT_READY = "DriverNotReady"
REASON_NOT_NVIDIA = "DriverTypeNotNvidia"
REASON_NO_ADDRESS = "MissingPCIAddress"
# A fatal Xid error on the card (domain/inventory/health/xid.py): False, sticky until gpu-handler restarts.
REASON_XID = "XidError"


@dataclass(frozen=True)
class HealthSettings:
    grace_seconds: float = 30.0
    backoff_seconds: tuple[float, ...] = (5.0, 10.0, 30.0, 60.0, 300.0)

    def __post_init__(self) -> None:
        if self.grace_seconds < 0 or not self.backoff_seconds or min(self.backoff_seconds) <= 0:
            raise ValueError("grace must be >= 0 and backoff a non-empty list of positive seconds")


@dataclass(frozen=True)
class Verdict:
    status: ConditionStatus
    reason: str
    message: str


@dataclass(frozen=True)
class FailureTrack:
    """In-memory only: rebuilt from scratch when the handler restarts."""

    since: float
    failures: int


def gate(status: dict[str, Any]) -> Verdict | None:
    """Why NVML must not be asked about this card at all; None when it may be."""
    address = (status.get("pciInfo") or {}).get("address")
    if not address:
        return Verdict(ConditionStatus.UNKNOWN, REASON_NO_ADDRESS, "status.pciInfo.address is not set yet")
    driver = (status.get("currentState") or {}).get("driverType")
    if driver != DriverType.NVIDIA.value:
        bound = driver or "no driver"
        return Verdict(
            ConditionStatus.UNKNOWN, REASON_NOT_NVIDIA, f"the card is bound to {bound}, not to nvidia"
        )
    if not conditions.is_true(status.get("conditions"), DRIVER_READY):
        return Verdict(ConditionStatus.UNKNOWN, REASON_DRIVER_NOT_READY, "waiting for DriverReady=True")
    return None


def healthy() -> Verdict:
    return Verdict(ConditionStatus.TRUE, REASON_HEALTHY, "NVML snapshot succeeded")


def on_failure(
    track: FailureTrack | None, now: float, reason: str, message: str, settings: HealthSettings
) -> tuple[FailureTrack, Verdict | None, float]:
    """The new track, the verdict (None inside the grace period) and the delay before a retry."""
    track = FailureTrack(now, 1) if track is None else FailureTrack(track.since, track.failures + 1)
    index = min(track.failures - 1, len(settings.backoff_seconds) - 1)
    delay = settings.backoff_seconds[index]
    if now - track.since < settings.grace_seconds:
        # Retry no later than the end of the grace, so the condition changes on time.
        return track, None, min(delay, max(track.since + settings.grace_seconds - now, 0.0) or delay)
    return track, Verdict(ConditionStatus.UNKNOWN, reason, message), delay
