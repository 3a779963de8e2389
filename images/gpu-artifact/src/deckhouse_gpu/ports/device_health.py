# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where the kubelet's device health stream reads the node's device health (KUBERNETES-FACTS.md F6.3).

The gRPC adapter subscribes once per stream; the service behind it (services.device_health) says
when the health changed. The adapter never sees PhysicalGPUs, the service never sees protobuf.
"""

from __future__ import annotations

from typing import Protocol

from deckhouse_gpu.domain.inventory.health.device_health import HealthReport


class HealthSubscription(Protocol):
    def next(self, timeout: float) -> HealthReport | None:
        """The current report: at once when it changed since the last call (or this is the first
        call and there is one), else after ``timeout`` seconds, unchanged. None while there is
        no report yet, and once the subscription is closed."""
        ...

    def close(self) -> None:
        """Ends the subscription; a ``next`` waiting in another thread returns None at once."""
        ...


class DeviceHealthFeed(Protocol):
    def subscribe(self) -> HealthSubscription: ...
