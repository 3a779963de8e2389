# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler's prepare service tells its metrics: how long each claim took, of which offer
type, and why a failed one failed.

A prepare's failure reason is the step that failed: the service reports every step that
finishes, so the one after the last is the culprit (domain/prepare/metrics.py names the reasons).
An unprepare's reason is the kind of error the release raised. Calls of the kubelet are served on
several gRPC threads, each under the node lock, so the last step is kept per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol

from deckhouse_gpu.domain.prepare import metrics as m
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.kube import KubeError
from deckhouse_gpu.ports.mig import MigError
from deckhouse_gpu.ports.sharing import SharingError
from deckhouse_gpu.ports.vfio import VfioError
from deckhouse_gpu.services.prepare.prepare_steps import PREPARE_STEPS

Operation = Literal["prepare", "unprepare"]
STEP_NAMES = tuple(step.name for step in PREPARE_STEPS)


class PrepareMetrics(Protocol):
    """Where the numbers go (adapters/metrics/handler_metrics.py). ``reason`` None: it succeeded;
    ``seconds`` None: the claim was never worked on (its whole call failed), no duration."""

    def observe_prepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None: ...

    def observe_unprepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None: ...

    def observe_device_status(self, kept: bool) -> None:
        """Whether the API server kept the last ``status.devices`` written to a claim."""


def unprepare_reason(error: BaseException) -> str:
    if isinstance(error, MigError):
        return m.MIG_REASON
    if isinstance(error, SharingError):
        return m.SHARING
    if isinstance(error, VfioError):
        return m.VFIO_REASON
    if isinstance(error, TimeoutError):
        return m.LOCK
    if isinstance(error, KubeError):
        return m.API
    if isinstance(error, OSError):
        return m.FILES
    return m.OTHER


def call_reason(error: BaseException) -> str:
    """A whole call failed before its claims were looked at: the lock, the checkpoint, the cards."""
    if isinstance(error, TimeoutError):
        return m.LOCK
    if isinstance(error, KubeError):
        return m.API
    if isinstance(error, OSError):
        return m.CHECKPOINT
    return m.OTHER


class PrepareObserver:
    def __init__(self, metrics: PrepareMetrics, steps: Sequence[str] = ()) -> None:
        self.metrics = metrics
        self.steps = tuple(steps) or STEP_NAMES
        self._local = threading.local()

    def step_done(self, step: str) -> None:
        self._local.last = step

    def step_hook(self, then: Callable[[str], None] | None) -> Callable[[str], None]:
        """The service's hook at every step boundary: noted here, then passed on to ``then``."""

        def hook(step: str) -> None:
            self.step_done(step)
            if then is not None:
                then(step)

        return hook

    def prepared(self, devices: Iterable[DevicePlan], error: str, seconds: float) -> None:
        """One claim of a prepare call; ``devices``: what it was planned to get (none if unknown)."""
        last = getattr(self._local, "last", None)
        self._local.last = None
        reason = m.step_reason(m.failed_step(self.steps, last)) if error else None
        self.metrics.observe_prepare(m.offer_type(devices), seconds, reason)

    def unprepared(self, entry: ClaimEntry | None, error: BaseException | None, seconds: float) -> None:
        """One claim of an unprepare call; ``entry`` None: nothing was prepared for it here."""
        devices = entry.devices if entry is not None else ()
        reason = unprepare_reason(error) if error is not None else None
        self.metrics.observe_unprepare(m.offer_type(devices), seconds, reason)

    def device_status(self, kept: bool | None) -> None:
        """A claim's ``status.devices`` written (services/prepare/claim_status.py); None: nothing to tell."""
        if kept is not None:
            self.metrics.observe_device_status(kept)

    def call_failed(self, operation: Operation, error: BaseException, claims: int) -> None:
        """A whole call failed: each of its ``claims`` that had no result yet counts as an error."""
        self._local.last = None
        observe = self.metrics.observe_prepare if operation == "prepare" else self.metrics.observe_unprepare
        for _ in range(claims):
            observe(m.UNKNOWN, None, call_reason(error))
