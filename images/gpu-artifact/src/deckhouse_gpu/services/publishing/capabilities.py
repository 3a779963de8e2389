# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's capabilities pass: NVML snapshot per card into the card's PhysicalGPU.

One card's failure never blocks another: every card is gated, queried and written on its own.
A failing card keeps its last condition through the grace period and is retried with backoff
(its own, independent of other cards and of heartbeats).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.inventory.handler_status import (
    HandlerUpdate,
    health_changed,
    status_patch,
)
from deckhouse_gpu.domain.inventory.health import hardware_health as health
from deckhouse_gpu.domain.inventory.health import xid
from deckhouse_gpu.domain.inventory.health.card_events import WARNING, XID_EVENT, health_event
from deckhouse_gpu.domain.inventory.nvidia_status import nvidia_view
from deckhouse_gpu.domain.inventory.nvml_snapshot import DriverInfo
from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, KubeError, NotFound, Object
from deckhouse_gpu.ports.nvml import NVML, NVMLDeviceNotFound, NVMLError, NVMLUnavailable
from deckhouse_gpu.services.publishing.xid_board import XidBoard
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.own_writes import OwnWrites
from deckhouse_gpu.services.runtime.status_writer import patch_status

log = logging.getLogger(__name__)


@dataclass
class CapabilitiesReport:
    ok: bool = True
    healthy: list[str] = field(default_factory=list)
    gated: dict[str, str] = field(default_factory=dict)  # name -> reason
    failing: dict[str, str] = field(default_factory=dict)  # name -> reason
    written: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # API errors
    retry_in: float | None = None  # the soonest per-card retry
    seconds: float = 0.0
    cards: list[Object] = field(default_factory=list)  # this node's cards as stored after the pass
    listed: bool = False  # the cards could be listed: ``cards`` is the whole node, not a failure


@dataclass(frozen=True)
class Assessment:
    update: HandlerUpdate
    gated: bool = False
    failure: tuple[str, str] | None = None  # reason, message: the grace period decides what to write


def assess(
    status: dict[str, Any], driver: DriverInfo | None, driver_error: NVMLError | None, nvml: NVML
) -> Assessment:
    """What one card's status should say now, from its gates and one NVML snapshot."""
    verdict = health.gate(status)
    if verdict is not None:
        return Assessment(HandlerUpdate(verdict=verdict, clear_nvidia=True), gated=True)
    address = str(status["pciInfo"]["address"])
    try:
        if driver is None:
            raise driver_error or NVMLUnavailable("NVML is not initialised")
        snapshot = nvml.snapshot(address)
    except NVMLUnavailable as error:
        return Assessment(HandlerUpdate(), failure=(health.REASON_NVML_UNAVAILABLE, str(error)))
    except NVMLDeviceNotFound as error:
        return Assessment(
            HandlerUpdate(), failure=(health.REASON_QUERY_FAILED, f"NVML does not see the card: {error}")
        )
    except NVMLError as error:
        return Assessment(HandlerUpdate(), failure=(health.REASON_QUERY_FAILED, str(error)))
    view = nvidia_view(snapshot, driver)
    return Assessment(HandlerUpdate(health.healthy(), view.capabilities, view.current_state))


def driver_info(nvml: NVML) -> tuple[DriverInfo | None, NVMLError | None]:
    try:
        return nvml.driver(), None
    except NVMLError as error:
        return None, error


class CapabilitiesPass:
    def __init__(
        self,
        api: KubeAPI,
        nvml: NVML,
        node_name: str,
        events: EventRecorder,
        clock: Clock,
        settings: health.HealthSettings,
        xids: XidBoard | None = None,
        cached: OwnWrites | None = None,
    ) -> None:
        self.api = api
        # This node's cards from the watch cache (with our own writes the cache does not show yet);
        # without one, each pass lists them.
        self.cached = cached
        self.xids = (
            xids  # fatal Xid errors per card, from the Xid watcher (services/publishing/xid_watcher.py)
        )
        self.nvml = nvml
        self.node_name = node_name
        self.events = events
        self.clock = clock
        self.settings = settings
        self._tracks: dict[str, health.FailureTrack] = {}
        self._retry_at: dict[str, float] = {}
        self._latest: dict[str, Object] = {}
        # Our own recent writes, so the watch events they cause do not trigger another pass.
        self.written_versions: deque[str] = deque(maxlen=256)

    def run(self) -> CapabilitiesReport:
        started = time.perf_counter()
        report = CapabilitiesReport()
        try:
            if self.cached is not None:
                cards = self.cached.items()
            else:
                cards = self.api.list(PHYSICAL_GPUS, label_selector=node_selector(self.node_name)).items
        except KubeError as error:
            report.ok = False
            report.failures.append(f"list: {error}")
            return report
        report.listed = True
        driver, driver_error = driver_info(self.nvml)
        self._latest = {str(card["metadata"]["name"]): card for card in cards}
        for card in sorted(cards, key=lambda c: str(c["metadata"]["name"])):
            try:
                self._card(card, driver, driver_error, report)
            except NotFound:
                self._forget(str(card["metadata"]["name"]))  # deleted meanwhile: nothing to do
            except KubeError as error:
                report.ok = False
                report.failures.append(f"{card['metadata']['name']}: {type(error).__name__}: {error}")
        live = {str(card["metadata"]["name"]) for card in cards}
        self._xid_notices(cards)
        for name in set(self._tracks) - live:
            self._forget(name)
        if self._retry_at:
            report.retry_in = max(min(self._retry_at.values()) - self.clock.monotonic(), 0.0)
        report.cards = [card for name, card in sorted(self._latest.items()) if name in live]
        report.seconds = time.perf_counter() - started
        return report

    def _card(
        self,
        card: Object,
        driver: DriverInfo | None,
        driver_error: NVMLError | None,
        report: CapabilitiesReport,
    ) -> None:
        name = str(card["metadata"]["name"])
        status = card.get("status") or {}
        if (fatal := self._xid_verdict(card)) is not None:
            result = assess(status, driver, driver_error, self.nvml)  # capabilities, when it answers
            self._forget(name)  # no grace and no retries: the Xid decides until it is cleared
            report.failing[name] = fatal.reason
            update = result.update if result.failure is None else HandlerUpdate()
            self._write(card, replace(update, verdict=fatal), report)
            return
        if (
            health.gate(status) is None
            and name in self._retry_at
            and self.clock.monotonic() < self._retry_at[name]
        ):
            report.failing[name] = "waiting for retry"
            return
        result = assess(status, driver, driver_error, self.nvml)
        if result.failure is not None:
            self._failed(card, *result.failure, report)
            return
        self._forget(name)
        if result.gated:
            report.gated[name] = result.update.verdict.reason if result.update.verdict else ""
        else:
            report.healthy.append(name)
        self._write(card, result.update, report)

    def _failed(self, card: Object, reason: str, message: str, report: CapabilitiesReport) -> None:
        name = str(card["metadata"]["name"])
        now = self.clock.monotonic()
        track, verdict, delay = health.on_failure(self._tracks.get(name), now, reason, message, self.settings)
        self._tracks[name] = track
        self._retry_at[name] = now + delay
        report.failing[name] = reason
        log.warning(
            "NVML snapshot failed",
            extra={"physicalgpu": name, "reason": reason, "error": message, "failures": track.failures},
        )
        if verdict is not None:
            self._write(card, HandlerUpdate(verdict=verdict), report)

    def _xid_verdict(self, card: Object) -> health.Verdict | None:
        """``HardwareHealthy=False`` for the card's fatal Xids; None without any, or when a gate
        (no address, not on nvidia, driver not ready) decides the condition instead."""
        status = card.get("status") or {}
        if self.xids is None or health.gate(status) is not None:
            return None
        address = str(status["pciInfo"]["address"])
        return xid.verdict(address, self.xids.fatal(address, str(card["metadata"].get("uid") or "")))

    def _xid_notices(self, cards: list[Object]) -> None:
        """Forgets the Xids of cards gone from the node; an Event per Xid the table does not know."""
        if self.xids is None:
            return
        by_address = {str(((c.get("status") or {}).get("pciInfo") or {}).get("address")): c for c in cards}
        self.xids.keep_only(by_address)
        for address, number in self.xids.take_notices():
            if (card := by_address.get(address)) is not None:
                self.events.record(card, WARNING, XID_EVENT, xid.notice(address, number))

    def _forget(self, name: str) -> None:
        self._tracks.pop(name, None)
        self._retry_at.pop(name, None)

    def _write(self, card: Object, update: HandlerUpdate, report: CapabilitiesReport) -> None:
        now = rfc3339(self.clock.now())
        before = card.get("status")
        stored, patch = patch_status(
            self.api, PHYSICAL_GPUS, card, lambda status: status_patch(status, update, now)
        )
        self._latest[str(card["metadata"]["name"])] = stored
        if not patch:
            return
        self.written_versions.append(str(stored["metadata"].get("resourceVersion")))
        if self.cached is not None:
            self.cached.wrote(card, stored)
        report.written.append(str(card["metadata"]["name"]))
        old, new = health_changed(before, patch)
        if old != new and update.verdict is not None:
            address = ((stored.get("status") or {}).get("pciInfo") or {}).get("address") or "?"
            event = health_event(old, update.verdict, self.node_name, str(address))
            if event is not None:
                self.events.record(stored, event.type, event.reason, event.message)
