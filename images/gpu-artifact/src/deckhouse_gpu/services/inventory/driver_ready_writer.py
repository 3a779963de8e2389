# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Writes a card's DriverReady condition without losing anybody else's (DESIGN.md D8).

The patch carries the whole ``status.conditions`` list (a merge patch replaces lists whole),
so it is guarded by the resourceVersion the list was read at: a concurrent write by
gpu-handler (HardwareHealthy) makes ours fail with Conflict instead of erasing theirs, and
we read the card again and recompute. Nothing is sent when the condition is already right.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from deckhouse_gpu.domain.inventory.driver_ready import (
    Verdict,
    status_of,
    updated_conditions,
)
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, Conflict, KubeAPI, NotFound, Object

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5


class NotLeader(Exception):
    """Leadership was lost before the write: the new leader will do it."""


@dataclass(frozen=True)
class WriteResult:
    name: str
    written: bool
    previous_status: str | None = None
    card: Object | None = None  # the card as last read or written; None when it is gone


class DriverReadyWriter:
    def __init__(self, api: KubeAPI, may_write: Callable[[], bool] = lambda: True) -> None:
        self.api = api
        self.may_write = may_write

    def apply(self, card: Object, decided: Verdict, now: str) -> WriteResult:
        """Sets DriverReady on ``card`` (a possibly stale copy); raises KubeError on API failure."""
        name = str(card["metadata"]["name"])
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            conditions = updated_conditions(card, decided, now)
            if conditions is None:
                return WriteResult(name, written=False, card=card)
            # Checked right before each request: a replica that lost the lease stops at once.
            if not self.may_write():
                raise NotLeader(name)
            patch = {
                "metadata": {"resourceVersion": str(card["metadata"].get("resourceVersion", ""))},
                "status": {"conditions": conditions},
            }
            try:
                written = self.api.patch(PHYSICAL_GPUS, name, patch, subresource="status")
            except Conflict:
                if attempt == MAX_CONFLICT_RETRIES:
                    raise
                log.debug("conflict; reading the card again", extra={"physicalgpu": name})
                try:
                    card = self.api.get(PHYSICAL_GPUS, name)
                except NotFound:
                    return WriteResult(name, written=False)
                continue
            except NotFound:
                return WriteResult(name, written=False)  # deleted meanwhile: nothing to keep right
            return WriteResult(name, written=True, previous_status=status_of(card), card=written)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
