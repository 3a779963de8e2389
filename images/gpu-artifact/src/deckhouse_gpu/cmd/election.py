# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A controller process's leadership: a Lease when leader election is on, else always leading."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from deckhouse_gpu.cmd.process import SHUTDOWN_SECONDS
from deckhouse_gpu.k8s_semantics.apimachinery.leader_lease import LeaseTimings
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.services.runtime.leader_election import AlwaysLeader, LeaderElector, Leadership


def time_left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class Election:
    def __init__(
        self,
        api: KubeAPI,
        identity: str,
        namespace: str,
        clock: Clock,
        lease: str,
        enabled: bool,
        on_change: Callable[[bool], None],
        timings: LeaseTimings | None = None,
    ) -> None:
        self.lease = lease
        self.elector = (
            LeaderElector(api, identity, namespace, clock, name=lease, timings=timings, on_change=on_change)
            if enabled
            else None
        )
        self.leadership: Leadership = self.elector or AlwaysLeader()
        self._thread: threading.Thread | None = None

    def is_leader(self) -> bool:
        return self.leadership.is_leader()

    def start(self, stop: threading.Event) -> None:
        if self.elector is not None:
            self._thread = threading.Thread(
                target=self.elector.run, args=(stop,), name=f"{self.lease}-lease", daemon=True
            )
            self._thread.start()

    def end(self, timeout: float = SHUTDOWN_SECONDS, release_timeout: float = SHUTDOWN_SECONDS) -> None:
        """After ``stop`` is set: waits for the renew loop, then frees the lease for a follower,
        each for at most its timeout (the threads are daemons: the process exits without them)."""
        if self._thread is not None:
            self._thread.join(timeout)
        if self.elector is not None:
            name = f"{self.lease}-release"
            releasing = threading.Thread(target=self.elector.release, name=name, daemon=True)
            releasing.start()
            releasing.join(release_timeout)
