# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated Xid events: the ``XidEvents`` port beside the simulated NVML (sim_nvml.py).

As NVML does, an Xid reaches every event set that registered its card, and only those: an Xid
of a card nobody watches is lost. Registering fails the way a snapshot does (no library: the whole
call; a lost or unknown card: that card is left out), and a card can be made one that does not
support events (``no_events``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLQueryFailed, XidEvent

CardState = Callable[[str], AbstractContextManager[object]]


class SimXidEvents:
    def __init__(self, card_state: CardState, check_library: Callable[[], object]) -> None:
        self._card_state = card_state  # SimulatedNVML.card_state: raises as a snapshot would
        self._check_library = check_library  # SimulatedNVML.driver: raises NVMLUnavailable
        self._changed = threading.Condition()
        self._subscriptions: list[SimXidSubscription] = []
        self._unsupported: set[str] = set()

    def open_xid_events(self, pci_addresses: Sequence[str]) -> SimXidSubscription:
        self._check_library()
        registered = []
        for address in pci_addresses:
            try:
                with self._card_state(address):
                    pass
            except (NVMLDeviceNotFound, NVMLQueryFailed):
                continue
            if address.lower() not in self._unsupported:
                registered.append(address.lower())
        subscription = SimXidSubscription(self, tuple(sorted(registered)))
        with self._changed:
            self._subscriptions.append(subscription)
        return subscription

    def no_events(self, address: str) -> None:
        """The card answers NOT_SUPPORTED when registered for events, as old cards do."""
        self._unsupported.add(address.lower())

    def inject(self, address: str, xid: int) -> int:
        """The driver reports Xid ``xid`` on the card; returns how many event sets got it."""
        event = XidEvent(address.lower(), xid)
        with self._changed:
            watching = [s for s in self._subscriptions if event.pci_address in s.registered]
            for subscription in watching:
                subscription.queue.append(event)
            self._changed.notify_all()
        return len(watching)

    def pending(self) -> int:
        """Events delivered to an event set but not yet waited for."""
        with self._changed:
            return sum(len(s.queue) for s in self._subscriptions)

    def _wait(self, subscription: SimXidSubscription, timeout: float) -> XidEvent | None:
        self._check_library()  # a broken library fails the wait as well
        with self._changed:
            self._changed.wait_for(lambda: bool(subscription.queue) or subscription.closed, timeout)
            if subscription.closed or not subscription.queue:
                return None
            return subscription.queue.popleft()

    def _close(self, subscription: SimXidSubscription) -> None:
        with self._changed:
            subscription.closed = True
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
            self._changed.notify_all()


class SimXidSubscription:
    def __init__(self, owner: SimXidEvents, registered: tuple[str, ...]) -> None:
        self._owner = owner
        self.registered = registered
        self.queue: deque[XidEvent] = deque()
        self.closed = False

    def wait(self, timeout_seconds: float) -> XidEvent | None:
        return self._owner._wait(self, timeout_seconds)

    def close(self) -> None:
        self._owner._close(self)
