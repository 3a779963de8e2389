# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent's loop: one pass at start, then passes triggered by udev and API events.

Nothing here polls on a hot path (DESIGN.md D10): a pass runs on a udev event for a PCI
device, on the deletion of one of this node's PhysicalGPUs, to re-check a card that vanished
without a remove event, after a failure (with backoff), and on a slow safety resync that
covers netlink buffer overruns, which lose events silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import Object
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync, SyncReport
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop


@dataclass(frozen=True)
class LoopSettings:
    debounce_seconds: float = 0.1  # coalesce the burst of events one hot-plug produces
    recheck_seconds: float = 1.0  # re-scan soon when a card is missing without a remove event
    # Look for the Node again while the cards have no owner (it was deleted and is being created
    # anew, as a kubelet re-registers its node): they get it once the Node is back.
    owner_recheck_seconds: float = 5.0
    resync_seconds: float = 600.0
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 30.0

    def timing(self) -> LoopTiming:
        return LoopTiming(self.debounce_seconds, self.backoff_initial_seconds, self.backoff_max_seconds)


class AgentObserver(Protocol):
    """The metrics (adapters/metrics/node_agent_metrics.py): each pass, each udev event."""

    def observe_scan(self, ok: bool, seconds: float, unreadable: int) -> None: ...

    def observe_udev(self, action: str) -> None: ...


class NodeAgentLoop(TriggerLoop):
    def __init__(
        self,
        sync: InventorySync,
        health: HealthState,
        clock: Clock,
        settings: LoopSettings,
        observer: AgentObserver | None = None,
    ) -> None:
        super().__init__(self._pass, health, clock, settings.timing())
        self.sync = sync
        self.settings = settings
        self.observer = observer

    def notify_deleted(self, name: str) -> None:
        self.notify(Trigger("watch", f"deleted {name}"))

    def on_cached_card(self, old: Object | None, new: Object | None) -> None:
        """The PhysicalGPU cache's callback: a card deleted or changed by someone else is written
        back (a pass compares and writes only what differs); our own writes wake nothing."""
        if new is not None and self.sync.own(new):
            return
        name = str(((new or old or {}).get("metadata") or {}).get("name") or "")
        self.notify(Trigger("watch", f"{'deleted' if new is None else 'changed'} {name}"))

    def notify_udev(self, action: str, address: str) -> None:
        if self.observer is not None:
            self.observer.observe_udev(action)
        removed = address if action == "remove" else None
        self.notify(Trigger("udev", f"{action} {address}", removed))

    def _pass(self, triggers: list[Trigger]) -> PassOutcome:
        removed = frozenset(t.removed_address for t in triggers if t.removed_address)
        report = self.sync.sync(removed)
        if self.observer is not None:
            self.observer.observe_scan(report.ok, report.seconds, len(report.device_errors))
        return PassOutcome(
            ok=report.ok,
            next_delay=self._delay_after(report),
            error="; ".join(report.failures) or None,
            log_fields={
                "objectsCreated": len(report.created),
                "objectsUpdated": len(report.updated),
                "objectsDeleted": len(report.deleted),
                "deviceErrors": len(report.device_errors),
                "durationSeconds": round(report.seconds, 4),
            },
        )

    def _delay_after(self, report: SyncReport) -> float:
        if report.suspected_gone:
            return self.settings.recheck_seconds
        return self.settings.owner_recheck_seconds if report.ownerless else self.settings.resync_seconds
