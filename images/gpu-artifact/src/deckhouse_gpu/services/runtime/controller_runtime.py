# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The threads and probes every controller of the module has: informers filling caches, workers
draining a work queue, a few periodic loops, and the health and readiness the kubelet probes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.work_queue import WorkQueue

Loop = Callable[[threading.Event], None]


class ControllerRuntime:
    def __init__(
        self,
        prefix: str,
        queue: WorkQueue,
        informers: Sequence[Informer],
        unhealthy_after: float,
        shared: Sequence[Informer] = (),
    ) -> None:
        self.prefix = prefix
        self.queue = queue
        self.informers = tuple(informers)
        # Caches another runtime of the process runs (one watch per kind): waited for, not started.
        self.shared = tuple(shared)
        self.unhealthy_after = unhealthy_after
        self._threads: list[threading.Thread] = []

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers + self.shared)

    def idle(self) -> bool:
        """Caches filled and nothing queued or in work: what tests and the simulator wait for."""
        return self.synced() and self.queue.idle()

    def health(self) -> tuple[bool, str]:
        """Unhealthy when a thread died or a watch has failed for long: a restart may help."""
        dead = [t.name for t in self._threads if not t.is_alive()]
        if dead:
            return False, f"threads stopped: {', '.join(dead)}"
        now = time.monotonic()
        for informer in self.informers + self.shared:
            failing = informer.failing_for(now)
            if failing >= self.unhealthy_after:
                return False, f"{informer.resource.plural} list/watch failing for {failing:.0f} s"
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        return (True, "caches synced") if self.synced() else (False, "caches not synced yet")

    def start(
        self, stop: threading.Event, work: Loop, workers: int, loops: Sequence[tuple[str, Loop]] = ()
    ) -> None:
        targets: list[tuple[str, Loop]] = [(f"informer-{i.resource.plural}", i.run) for i in self.informers]
        targets += list(loops)
        targets += [(f"worker-{n}", work) for n in range(workers)]
        for name, target in targets:
            thread = threading.Thread(target=target, args=(stop,), name=f"{self.prefix}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        # The watch threads end at their next event or watch timeout; only workers are joined.
        threading.Thread(
            target=self._close_on, args=(stop,), name=f"{self.prefix}-closer", daemon=True
        ).start()

    def wait_synced(self, stop: threading.Event) -> None:
        """Workers start after the first lists: an empty cache would read as "nothing there"."""
        while not stop.is_set() and not self.synced():
            stop.wait(0.05)

    def workers(self) -> list[threading.Thread]:
        return [t for t in self._threads if t.name.startswith(f"{self.prefix}-worker")]

    def join_workers(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.name.startswith(f"{self.prefix}-worker"):
                thread.join(max(0.0, deadline - time.monotonic()))

    def _close_on(self, stop: threading.Event) -> None:
        stop.wait()
        self.queue.close()


class RuntimeProbes:
    """What a controller built on a ControllerRuntime answers: caches, probes, shutdown."""

    runtime: ControllerRuntime

    def synced(self) -> bool:
        return self.runtime.synced()

    def idle(self) -> bool:
        return self.runtime.idle()

    def health(self) -> tuple[bool, str]:
        return self.runtime.health()

    def readiness(self) -> tuple[bool, str]:
        return self.runtime.readiness()

    def join_workers(self, timeout: float = 10.0) -> None:
        self.runtime.join_workers(timeout)
