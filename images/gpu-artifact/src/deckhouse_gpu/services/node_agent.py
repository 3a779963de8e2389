"""gpu-node-agent's loop: one pass at start, then passes triggered by udev and API events.

Nothing here polls on a hot path (ARCHITECTURE.md D10): a pass runs on a udev event for a PCI
device, on the deletion of one of this node's PhysicalGPUs, to re-check a card that vanished
without a remove event, after a failure (with backoff), and on a slow safety resync that
covers netlink buffer overruns, which lose events silently.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass

from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.services.health import HealthState
from deckhouse_gpu.services.inventory_sync import InventorySync, SyncReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopSettings:
    debounce_seconds: float = 0.1  # coalesce the burst of events one hot-plug produces
    recheck_seconds: float = 1.0  # re-scan soon when a card is missing without a remove event
    resync_seconds: float = 600.0
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 60.0


@dataclass(frozen=True)
class Trigger:
    source: str  # "udev", "watch", "start"
    detail: str = ""
    removed_address: str | None = None


class NodeAgentLoop:
    def __init__(
        self, sync: InventorySync, health: HealthState, clock: Clock, settings: LoopSettings
    ) -> None:
        self.sync = sync
        self.health = health
        self.clock = clock
        self.settings = settings
        self._triggers: queue.Queue[Trigger] = queue.Queue()
        self._backoff = 0.0
        self._busy = True  # until the first pass has finished

    def idle(self) -> bool:
        """No pass running and none requested: what the simulator waits for between steps."""
        return not self._busy and self._triggers.empty()

    def notify(self, trigger: Trigger) -> None:
        """Thread-safe: called by the udev monitor and the API watch."""
        self._triggers.put(trigger)

    def wake(self) -> None:
        """Makes a loop waiting for triggers look at its stop event now (used on SIGTERM)."""
        self.notify(Trigger("stop"))

    def notify_deleted(self, name: str) -> None:
        self.notify(Trigger("watch", f"deleted {name}"))

    def notify_udev(self, action: str, address: str) -> None:
        removed = address if action == "remove" else None
        self.notify(Trigger("udev", f"{action} {address}", removed))

    def run(self, stop: threading.Event) -> None:
        removed: set[str] = set()
        delay = 0.0  # the first pass runs at once
        while not stop.is_set():
            if not self._wait(delay, removed, stop):
                continue
            self._busy = True
            report = self.sync.sync(frozenset(removed))
            if report.ok:
                removed.clear()  # after a failed pass the remove hints are still needed
            self._record(report)
            delay = self._next_delay(report)
            self._busy = False

    def run_once(self) -> SyncReport:
        report = self.sync.sync()
        self._record(report)
        return report

    def _wait(self, delay: float, removed: set[str], stop: threading.Event) -> bool:
        """Waits for a trigger or the delay; True when a pass should run now."""
        try:
            trigger = self._triggers.get(timeout=delay) if delay > 0 else None
        except queue.Empty:
            trigger = None
        if stop.is_set():
            return False
        if trigger is not None:
            self._busy = True
            self._absorb(trigger, removed)
            deadline = self.clock.monotonic() + self.settings.debounce_seconds
            while (left := deadline - self.clock.monotonic()) > 0:
                try:
                    self._absorb(self._triggers.get(timeout=left), removed)
                except queue.Empty:
                    break
        return True

    def _absorb(self, trigger: Trigger, removed: set[str]) -> None:
        log.debug("sync triggered", extra={"source": trigger.source, "detail": trigger.detail})
        if trigger.removed_address:
            removed.add(trigger.removed_address)

    def _record(self, report: SyncReport) -> None:
        error = "; ".join(report.failures) or None
        self.health.record(report.ok, error, self.clock.monotonic())
        fields = {
            "ok": report.ok,
            "objectsCreated": len(report.created),
            "objectsUpdated": len(report.updated),
            "objectsDeleted": len(report.deleted),
            "deviceErrors": len(report.device_errors),
            "durationSeconds": round(report.seconds, 4),
        }
        if report.ok:
            log.info("sync done", extra=fields)
        else:
            log.warning("sync failed", extra={**fields, "error": error})

    def _next_delay(self, report: SyncReport) -> float:
        settings = self.settings
        if not report.ok:
            self._backoff = min(
                max(self._backoff * 2, settings.backoff_initial_seconds), settings.backoff_max_seconds
            )
            return self._backoff
        self._backoff = 0.0
        if report.suspected_gone:
            return settings.recheck_seconds
        return settings.resync_seconds
