# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node's device health for the kubelet's health streams (KUBERNETES-FACTS.md F6.3).

The handler loop updates the board after each capabilities pass with the node's PhysicalGPUs as
stored; the board turns them into one report (domain/inventory/health/device_health.py) and wakes every
subscribed stream when the report changed. A pass that changed nothing wakes nobody: the streams
send the unchanged report again on their own, so the kubelet's copy never goes stale.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from deckhouse_gpu.domain.inventory.health.device_health import (
    DeviceHealth,
    HealthReport,
    health_lines,
    node_health,
)
from deckhouse_gpu.domain.offers.slice_layout import pool_name


class DeviceHealthBoard:
    """Implements ``ports.device_health.DeviceHealthFeed`` for one node's pool."""

    def __init__(self, node_name: str) -> None:
        self.pool = pool_name(node_name)
        self._changed = threading.Condition()
        self._report: HealthReport | None = None
        self._version = 0  # bumped on every change of the devices' health or messages
        self._known: dict[str, tuple[str, ...]] = {}  # card -> device names, kept when it is gone

    def update(self, cards: Iterable[dict[str, Any]], checked_at: datetime) -> bool:
        """The node's cards as the pass left them; True when a device's health or message changed."""
        devices, known = node_health(cards, self._known)
        with self._changed:
            self._known = known
            changed = self._report is None or self._report.devices != devices
            self._report = HealthReport(self.pool, devices, int(checked_at.timestamp()))
            if changed:
                self._version += 1
                self._changed.notify_all()
        return changed

    def current(self) -> HealthReport | None:
        with self._changed:
            return self._report

    def lines(self) -> list[str]:
        """The current health, one line per card (``health_lines``); empty before the first pass."""
        report = self.current()
        return health_lines(report.devices) if report else []

    def devices(self, names: Iterable[str]) -> list[DeviceHealth]:
        """The current entries of the given device names (a claim's devices), in that order."""
        report = self.current()
        found = {entry.device: entry for entry in report.devices} if report else {}
        return [found[name] for name in names if name in found]

    def subscribe(self) -> _Subscription:
        return _Subscription(self)

    def _wait(self, subscription: _Subscription, timeout: float) -> HealthReport | None:
        with self._changed:
            self._changed.wait_for(lambda: subscription.closed or self._version != subscription.seen, timeout)
            if subscription.closed:
                return None
            subscription.seen = self._version
            return self._report

    def _close(self, subscription: _Subscription) -> None:
        with self._changed:
            subscription.closed = True
            self._changed.notify_all()


class _Subscription:
    """One stream's view: which version it sent last, and whether it is over."""

    def __init__(self, board: DeviceHealthBoard) -> None:
        self._board = board
        self.seen = 0
        self.closed = False

    def next(self, timeout: float) -> HealthReport | None:
        return self._board._wait(self, timeout)

    def close(self) -> None:
        self._board._close(self)
