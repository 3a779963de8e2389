# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where the health endpoints read a component's liveness (services.health.HealthState)."""

from __future__ import annotations

from typing import Protocol

from deckhouse_gpu.domain.liveness import HealthSnapshot


class HealthSource(Protocol):
    def snapshot(self) -> HealthSnapshot: ...
