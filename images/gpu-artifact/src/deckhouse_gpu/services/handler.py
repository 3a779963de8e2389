# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's loop: capabilities and ResourceSlices on PhysicalGPU and Node changes, retries, a heartbeat.

The heartbeat exists only for silent NVML failures (a card falls off the bus without any API
event); everything else is driven by the watch on this node's PhysicalGPUs (DESIGN.md D10).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from deckhouse_gpu.domain.inventory.hardware_health import HealthSettings, gate
from deckhouse_gpu.domain.offers.card_offers import ActiveMode, eligible
from deckhouse_gpu.domain.offers.slice_layout import LayoutError
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import NODES, KubeError, Object, WatchEvent
from deckhouse_gpu.services.capabilities import CapabilitiesPass
from deckhouse_gpu.services.device_health import DeviceHealthBoard
from deckhouse_gpu.services.health import HealthState
from deckhouse_gpu.services.slice_publisher import LABEL_MIG, LABEL_SHARING, InvalidPool, SlicePublisher
from deckhouse_gpu.services.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop
from deckhouse_gpu.services.xid_watcher import XidWatcher


@dataclass(frozen=True)
class HandlerSettings:
    heartbeat_seconds: float = 60.0
    health: HealthSettings = field(default_factory=HealthSettings)
    timing: LoopTiming = field(
        default_factory=lambda: LoopTiming(
            debounce_seconds=0.1, backoff_initial_seconds=1.0, backoff_max_seconds=30.0
        )
    )


class PublishObserver(Protocol):
    """The metrics of publishing: ``result`` changed, unchanged or error; the features given up."""

    def observe_publish(self, result: str, fallen_back: Collection[str]) -> None: ...


def fallen_back(publisher: SlicePublisher) -> list[str]:
    """The DRA features the publisher gave up because the API server dropped their fields (not
    those switched off by the settings)."""
    settings = publisher.settings
    return sorted(f for f, on in publisher.features.items() if not on and settings.mode(f) != "off")


def watchable(cards: list[dict[str, Any]]) -> list[str]:
    """The cards NVML may be asked about (no gate stops it), whose Xid events are watched."""
    return [str(c["status"]["pciInfo"]["address"]) for c in cards if gate(c.get("status") or {}) is None]


class HandlerLoop(TriggerLoop):
    def __init__(
        self,
        capabilities: CapabilitiesPass,
        health: HealthState,
        clock: Clock,
        settings: HandlerSettings,
        publisher: SlicePublisher | None = None,
        after_publish: Callable[[list[str]], None] | None = None,
        device_health: DeviceHealthBoard | None = None,
        observer: PublishObserver | None = None,
        xid_watcher: XidWatcher | None = None,
    ) -> None:
        super().__init__(self._pass, health, clock, settings.timing)
        self.capabilities = capabilities
        self.settings = settings
        self.publisher = publisher
        self._modes: dict[str, ActiveMode] = {}
        self._modes_lock = threading.Lock()  # prepare reports from the kubelet's gRPC threads
        self.after_publish = after_publish  # e.g. the CDI base spec for the offered cards
        self._node_labels: dict[str, str] | None = None
        self.device_health = device_health  # what the kubelet's health stream sends (DESIGN.md F6.3)
        self.observer = observer
        self.xid_watcher = xid_watcher  # watches the cards of each pass; an Xid wakes the loop
        if xid_watcher is not None:
            xid_watcher.listener = lambda detail: self.notify(Trigger("xid", detail))

    def follow_modes(self, modes: Mapping[str, ActiveMode]) -> None:
        """Prepare's report of the mode each card is prepared in (PCI address -> Physical/MIG);
        a change republishes the offers (DESIGN.md D2 b)."""
        with self._modes_lock:
            changed = dict(modes) != self._modes
            self._modes = dict(modes)
        if changed:
            self.notify(Trigger("prepare", "mode"))

    def active_modes(self) -> dict[str, ActiveMode]:
        with self._modes_lock:
            return dict(self._modes)

    def on_change(self, event: WatchEvent | None) -> None:
        """Watch callback; ignores the events of the handler's own writes."""
        if event is not None:
            version = str(event.object.get("metadata", {}).get("resourceVersion", ""))
            if event.type == "MODIFIED" and version in self.capabilities.written_versions:
                return
            self.notify(Trigger("watch", f"{event.type} {event.object.get('metadata', {}).get('name')}"))
        else:
            self.notify(Trigger("watch", "relisted"))

    def on_node_change(self, event: WatchEvent | None) -> None:
        """Watch callback for this node's Node: its sharing/MIG labels decide the offers."""
        labels = (event.object.get("metadata", {}).get("labels") or {}) if event else {}
        relevant = {key: value for key, value in labels.items() if key in (LABEL_SHARING, LABEL_MIG)}
        if event is None or relevant != self._node_labels:
            self._node_labels = relevant
            self.notify(Trigger("node", "labels changed" if event else "relisted"))

    def on_class_change(self, old: Object | None, new: Object | None) -> None:
        """DeviceClass cache callback (selectors only, domain/offers/class_demand.py): a class
        created, deleted or given other selectors changes what this node offers (DESIGN.md D19)."""
        name = ((new or old or {}).get("metadata") or {}).get("name")
        self.notify(Trigger("classes", f"{'deleted' if new is None else 'changed'} {name}"))

    def _pass(self, triggers: list[Trigger]) -> PassOutcome:
        report = self.capabilities.run()
        if report.listed and self.device_health is not None:
            self.device_health.update(report.cards, self.capabilities.clock.now())
        if report.listed and self.xid_watcher is not None:
            self.xid_watcher.follow(watchable(report.cards))
        published = None
        if report.ok and self.publisher is not None:
            try:
                node = self.capabilities.api.get(NODES, self.capabilities.node_name)
                published = self.publisher.publish(report.cards, node, self.active_modes())
                if self.after_publish is not None:
                    self.after_publish(
                        [c["status"]["pciInfo"]["address"] for c in report.cards if eligible(c)]
                    )
            except (KubeError, LayoutError, InvalidPool, OSError, ValueError) as error:
                report.ok = False
                report.failures.append(f"publish: {type(error).__name__}: {error}")
            if self.observer is not None:
                result = "error" if published is None else "changed" if published.writes else "unchanged"
                self.observer.observe_publish(result, fallen_back(self.publisher))
        delay = self.settings.heartbeat_seconds
        if report.retry_in is not None:
            delay = min(delay, report.retry_in)
        return PassOutcome(
            ok=report.ok,
            next_delay=delay,
            error="; ".join(report.failures) or None,
            log_fields={
                "healthy": len(report.healthy),
                "gated": len(report.gated),
                "failing": len(report.failing),
                "written": len(report.written),
                "slices": published.slices if published else None,
                "sliceWrites": published.writes if published else None,
                "durationSeconds": round(report.seconds, 4),
            },
        )
