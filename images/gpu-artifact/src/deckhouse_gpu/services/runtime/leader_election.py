# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Acquires and renews gpu-controller's Lease; tells the controller when it leads.

``is_leader`` is computed at each call from the start of the last successful renewal, not
kept as a flag updated by the renew loop: a loop stuck in a slow request still stops the
work on time. Lease writes are merge patches guarded by the resourceVersion that was read,
so of two candidates racing for a free lease exactly one wins.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

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
from deckhouse_gpu.ports.clock import Clock, rfc3339_micro
from deckhouse_gpu.ports.controller_resources import LEASES
from deckhouse_gpu.ports.kube import AlreadyExists, Conflict, KubeAPI, KubeError, NotFound, Object

log = logging.getLogger(__name__)


class Leadership(Protocol):
    """Whether this replica leads now: the controllers ask before every write."""

    def is_leader(self) -> bool: ...


class AlwaysLeader:
    """Leader election switched off: a single replica works all the time."""

    def is_leader(self) -> bool:
        return True


class LeaderElector:
    def __init__(
        self,
        api: KubeAPI,
        identity: str,
        namespace: str,
        clock: Clock,
        name: str = "gpu-controller",
        timings: LeaseTimings | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.api = api
        self.identity = identity
        self.namespace = namespace
        self.name = name
        self.clock = clock
        self.timings = timings or LeaseTimings()
        self.on_change = on_change or (lambda _: None)
        self._lock = threading.Lock()
        self._renewed_at: float | None = None  # monotonic start of the last successful write
        self._held: Object | None = None  # the lease as our last renewal wrote it
        self._seen: Observation | None = None
        self._released = False
        self._reported = False
        self._report_lock = threading.Lock()  # the run loop and release() both report

    def is_leader(self) -> bool:
        with self._lock:
            renewed_at, released_ = self._renewed_at, self._released
        return (
            not released_
            and renewed_at is not None
            and self.clock.monotonic() - renewed_at < self.timings.renew_deadline
        )

    def run(self, stop: threading.Event) -> None:
        """Tries every retry period until ``stop``; the caller releases after its work stopped."""
        while not stop.is_set():
            self.try_once()
            self._report_change()
            stop.wait(self.timings.retry_period)
        self._report_change()

    def try_once(self) -> None:
        """One attempt to acquire or renew; API failures are logged and tried again later."""
        started = self.clock.monotonic()  # before the request: errs on the side of stopping early
        # While leading, renew the lease as last written, without reading it first (client-go's
        # optimistic renew): one request per retry period instead of two. Someone else's write
        # since makes the update conflict, and the next attempt reads.
        held, self._held = (self._held if self.is_leader() else None), None
        try:
            try:
                lease = held or self.api.get(LEASES, self.name, self.namespace)
            except NotFound:
                self._create(started)
                return
            record = LeaseRecord.from_lease(lease)
            self._seen = observe(self._seen, record, started)
            action = decide(self._seen, self.identity, started, self.timings)
            if action is Action.WAIT:
                return
            new = claimed(record, self.identity, action, self._stamp(), self.timings)
            patch = {
                "metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                "spec": new.spec(),
            }
            written = self.api.patch(LEASES, self.name, patch, namespace=self.namespace)
            self._won(new, started, action)
            self._held = written
        except (Conflict, AlreadyExists):
            log.debug("another candidate wrote the lease first", extra={"lease": self.name})
        except KubeError as error:
            log.warning("lease request failed", extra={"lease": self.name, "error": str(error)})

    def release(self) -> None:
        """Stops leading now and frees the lease so that a follower need not wait for expiry."""
        with self._lock:
            was_leader = self._renewed_at is not None and not self._released
            self._released = True
        self._report_change()
        if not was_leader:
            return
        try:
            lease = self.api.get(LEASES, self.name, self.namespace)
            record = LeaseRecord.from_lease(lease)
            if record.holder != self.identity:
                return
            patch = {
                "metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]},
                "spec": released(record, self._stamp()).spec(),
            }
            self.api.patch(LEASES, self.name, patch, namespace=self.namespace)
            log.info("lease released", extra={"lease": self.name, "identity": self.identity})
        except KubeError as error:
            log.warning("lease not released; it expires instead", extra={"error": str(error)})

    def _create(self, started: float) -> None:
        record = claimed(None, self.identity, Action.ACQUIRE, self._stamp(), self.timings)
        spec = {key: value for key, value in record.spec().items() if value is not None}
        lease = {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        written = self.api.create(LEASES, lease)
        self._won(record, started, Action.ACQUIRE)
        self._held = written

    def _won(self, record: LeaseRecord, started: float, action: Action) -> None:
        with self._lock:
            if self._released:
                return  # stopping: a write that raced with release does not make us lead again
            self._renewed_at = started
        self._seen = Observation(record, started)
        if action is Action.ACQUIRE:
            log.info(
                "lease acquired",
                extra={"lease": self.name, "identity": self.identity, "transitions": record.transitions},
            )

    def _report_change(self) -> None:
        with self._report_lock:
            leading = self.is_leader()
            if leading != self._reported:
                self._reported = leading
                log.info("leading" if leading else "not leading", extra={"identity": self.identity})
                self.on_change(leading)

    def _stamp(self) -> str:
        return rfc3339_micro(self.clock.now())
