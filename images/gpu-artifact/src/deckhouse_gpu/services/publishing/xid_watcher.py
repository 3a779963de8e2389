# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's Xid watcher: one thread waiting on NVML for critical Xid events (DESIGN.md S4.2.3).

The handler loop tells it after each pass which cards to watch (``follow``: the cards NVML may be
asked about, bound to nvidia with a ready driver); the watcher opens an event set for them and
opens a new one when they change. Each Xid goes on the board (services/publishing/xid_board.py) and, unless
it is the application's own fault, wakes the handler loop, whose next pass writes the card's
condition or the Event at once instead of at the heartbeat.

Each wait is bounded (``wait_seconds``), so a stop is seen within that time. A failed wait (NVML
does not say for which card; a card that fell off the bus can cause it) wakes the loop too: its
pass asks every card, and finds the lost one. The set is opened again after ``retry_seconds``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from deckhouse_gpu.domain.inventory.health.xid import XidClass
from deckhouse_gpu.ports.nvml import NVMLError, XidEvent, XidEvents, XidSubscription
from deckhouse_gpu.services.publishing.xid_board import XidBoard

log = logging.getLogger(__name__)


class XidWatcher:
    def __init__(
        self,
        events: XidEvents,
        board: XidBoard | None = None,
        *,
        wait_seconds: float = 1.0,
        retry_seconds: float = 10.0,
    ) -> None:
        self.events = events
        self.board = board or XidBoard()
        self.wait_seconds = wait_seconds
        self.retry_seconds = retry_seconds
        self.listener: Callable[[str], None] | None = None  # wakes the handler loop (HandlerLoop)
        self._lock = threading.Lock()
        self._wanted: frozenset[str] = frozenset()
        self._tried: frozenset[str] = frozenset()  # the cards of the last attempt to open a set
        self._changed = threading.Event()
        self.handled = 0  # events taken off NVML so far (tests and the simulator wait on it)

    def follow(self, addresses: Iterable[str]) -> None:
        """The cards to watch from now on (thread-safe; from the handler loop after each pass)."""
        wanted = frozenset(addresses)
        with self._lock:
            if wanted == self._wanted:
                return
            self._wanted = wanted
        self._changed.set()

    def idle(self) -> bool:
        """The watcher has tried to watch exactly the cards it was last told (the simulator's settle)."""
        with self._lock:
            return self._wanted == self._tried

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="xid-watcher", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        subscription: XidSubscription | None = None
        try:
            while not stop.is_set():
                subscription = self._step(subscription, stop)
        finally:
            if subscription is not None:
                subscription.close()

    def _step(self, subscription: XidSubscription | None, stop: threading.Event) -> XidSubscription | None:
        """One bounded turn: (re)open the set when the cards changed, then wait for one event."""
        with self._lock:
            wanted, changed = self._wanted, self._wanted != self._tried
        if changed or subscription is None:
            if subscription is not None:
                subscription.close()
                subscription = None
            self._changed.clear()
            subscription = self._open(wanted)
            if subscription is None:
                self._pause(stop, self.retry_seconds if wanted else self.wait_seconds)
                return None
        try:
            event = subscription.wait(self.wait_seconds)
        except NVMLError as error:
            log.warning("waiting for Xid events failed; checking every card now", extra={"error": str(error)})
            subscription.close()
            self._wake("Xid wait failed")
            self._pause(stop, self.retry_seconds)
            return None
        if event is not None:
            self.handle(event)
        return subscription

    def _pause(self, stop: threading.Event, seconds: float) -> None:
        """Sleeps until ``seconds`` pass, the cards change or a stop, in bounded waits."""
        deadline = time.monotonic() + seconds
        while not stop.is_set() and not self._changed.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._changed.wait(min(left, self.wait_seconds))

    def _open(self, wanted: frozenset[str]) -> XidSubscription | None:
        with self._lock:
            self._tried = wanted
        if not wanted:
            return None
        try:
            subscription = self.events.open_xid_events(sorted(wanted))
        except NVMLError as error:
            log.warning(
                "cannot watch Xid events; trying again", extra={"error": str(error), "cards": len(wanted)}
            )
            return None
        log.info("watching Xid events", extra={"cards": list(subscription.registered)})
        return subscription

    def handle(self, event: XidEvent) -> None:
        """Records one Xid; wakes the handler loop unless it is the application's own fault."""
        self.handled += 1
        info = self.board.record(event.pci_address, event.xid)
        fields = {"pciAddress": event.pci_address, "xid": event.xid, "meaning": info.meaning}
        fields["class"] = info.kind
        if info.kind is XidClass.APPLICATION:
            log.info("Xid error of an application; the card is fine", extra=fields)
            return
        if info.kind is XidClass.UNCLASSIFIED:
            log.warning("Xid error not in the module's table; the card's health is unchanged", extra=fields)
        else:
            log.error("fatal Xid error: the card turns unhealthy until gpu-handler restarts", extra=fields)
        self._wake(f"Xid {event.xid} on {event.pci_address}")

    def _wake(self, detail: str) -> None:
        if self.listener is not None:
            self.listener(detail)
