# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's loop: capabilities and ResourceSlices on PhysicalGPU, Node and slice changes,
retries, a heartbeat.

The heartbeat exists only for silent NVML failures (a card falls off the bus without any API
event); everything else is driven by the watches on this node's PhysicalGPUs, Node and
ResourceSlices (DESIGN.md D10). With the watch caches (``HandlerCaches``) a pass reads nothing from
the API server and writes only what differs: an idle node sends no request at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings, gate
from deckhouse_gpu.domain.inventory.other_owner import node_owner
from deckhouse_gpu.domain.offers.card_offers import ActiveMode, eligible
from deckhouse_gpu.domain.offers.slice_layout import LayoutError
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import NODES, KubeError, NotFound, Object, WatchEvent
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from deckhouse_gpu.services.publishing.node_caches import HandlerCaches
from deckhouse_gpu.services.publishing.other_owner import OwnerBoard
from deckhouse_gpu.services.publishing.slice_publisher import (
    LABEL_MIG,
    LABEL_SHARING,
    InvalidPool,
    SlicePublisher,
)
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop


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


def name_of(obj: Object | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def version_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


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
        caches: HandlerCaches | None = None,
    ) -> None:
        super().__init__(self._pass, health, clock, settings.timing)
        self.caches = caches  # without them, each pass reads the cards, the Node and the slices
        self.capabilities = capabilities
        self.settings = settings
        self.publisher = publisher
        self._modes: dict[str, ActiveMode] = {}
        self._modes_lock = threading.Lock()  # prepare reports from the kubelet's gRPC threads
        self.after_publish = after_publish  # e.g. the CDI base spec for the offered cards
        self._node_signals: tuple[object, ...] | None = None
        self._watched_node: dict[str, Any] | None = None  # this node's Node, from the watch
        # Another owner of the node's cards (DESIGN.md D16): held cards get no offers.
        self.owners: OwnerBoard | None = None
        self.prepared_claims: Callable[[], list[str]] = list  # the claims prepare holds, for reports
        # what the kubelet's health stream sends (KUBERNETES-FACTS.md F6.3)
        self.device_health = device_health
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
        """Watch callback for this node's Node: its sharing/MIG labels and another owner of its
        cards (device plugin resources, the labels of node-manager and the GPU operator) decide
        the offers; the kubelet's heartbeats change neither and cause no pass."""
        # The pass uses the Node as the watch last delivered it instead of reading it again; a relist
        # or a deletion makes the next pass read it.
        self._watched_node = event.object if event is not None and event.type != "DELETED" else None
        labels = (event.object.get("metadata", {}).get("labels") or {}) if event else {}
        relevant = {key: value for key, value in labels.items() if key in (LABEL_SHARING, LABEL_MIG)}
        signals = (relevant, node_owner(event.object) if event else None)
        if event is None or signals != self._node_signals:
            self._node_signals = signals
            self.notify(Trigger("node", "labels or owner changed" if event else "relisted"))

    def on_cached_card(self, old: Object | None, new: Object | None) -> None:
        """The PhysicalGPU cache's callback; ignores the events of the handler's own writes."""
        if new is not None and old is not None and str(version_of(new)) in self.capabilities.written_versions:
            return
        self.notify(Trigger("watch", f"card {name_of(new or old)}"))

    def on_cached_node(self, old: Object | None, new: Object | None) -> None:
        """The Node cache's callback: its sharing/MIG labels and another owner of its cards decide
        the offers; the kubelet's other status changes cause no pass."""
        labels = ((new or {}).get("metadata") or {}).get("labels") or {}
        relevant = {key: value for key, value in labels.items() if key in (LABEL_SHARING, LABEL_MIG)}
        signals = (relevant, node_owner(new) if new is not None else None)
        if old is None or new is None or signals != self._node_signals:
            self._node_signals = signals
            self.notify(Trigger("node", "labels or owner changed"))

    def on_cached_slice(self, old: Object | None, new: Object | None) -> None:
        """The slice cache's callback: a slice someone else changed or deleted is written back
        (DESIGN.md D10), as upstream's ResourceSlice controller does; our own writes wake nobody."""
        if self.caches is not None and new is not None and self.caches.slice_writes.own(new):
            return
        self.notify(Trigger("slices", f"{'deleted' if new is None else 'changed'} {name_of(new or old)}"))

    def _node(self) -> Object:
        if self.caches is None:  # the Node as the watch last delivered it, else read
            return self._watched_node or self.capabilities.api.get(NODES, self.capabilities.node_name)
        node = self.caches.node_object()
        if node is None:
            raise NotFound(f"Node {self.capabilities.node_name} is not in the watch cache (yet)")
        return node

    def on_class_change(self, old: Object | None, new: Object | None) -> None:
        """DeviceClass cache callback (selectors only, domain/offers/class_demand.py): a class
        created, deleted or given other selectors changes what this node offers (DESIGN.md D19)."""
        name = ((new or old or {}).get("metadata") or {}).get("name")
        self.notify(Trigger("classes", f"{'deleted' if new is None else 'changed'} {name}"))

    def _pass(self, triggers: list[Trigger]) -> PassOutcome:
        if self.caches is not None and not self.caches.synced():
            return PassOutcome(ok=False, next_delay=0.0, error="waiting for the watch caches to fill")
        report = self.capabilities.run()
        if report.listed and self.device_health is not None:
            self.device_health.update(report.cards, self.capabilities.clock.now())
        if report.listed and self.xid_watcher is not None:
            self.xid_watcher.follow(watchable(report.cards))
        published = None
        if report.ok and self.publisher is not None:
            try:
                node = self._node()
                cards, modes = report.cards, self.active_modes()
                if self.owners is not None:
                    cards = self.owners.apply(cards, node, modes, self.prepared_claims())
                published = self.publisher.publish(cards, node, modes)
                if self.after_publish is not None:
                    self.after_publish([c["status"]["pciInfo"]["address"] for c in cards if eligible(c)])
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
