# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Xid errors gpu-handler has seen since it started, per card (DESIGN.md S4.2.3).

The watcher (services/publishing/xid_watcher.py) records every Xid here; the capabilities pass reads the
fatal ones of each card into its ``HardwareHealthy`` condition (domain/inventory/health/xid.py) and takes
the unclassified ones to make Events of them.

A fatal Xid is sticky: NVML never says a card recovered, so the record stays until gpu-handler
restarts (the board lives in memory only) or the card's PhysicalGPU is gone. The record is bound
to the PhysicalGPU's UID the first time a pass reads it: a card removed and added again (udev
remove/add) gets a new object, and so a clean record, even when both happened between two passes.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass

from deckhouse_gpu.domain.inventory.health import xid as xids
from deckhouse_gpu.domain.inventory.health.xid import XidClass, XidInfo


@dataclass
class _Fatal:
    xid: int
    uid: str | None = None  # the PhysicalGPU it was read into; None until a pass reads it


class XidBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fatal: dict[str, list[_Fatal]] = {}  # PCI address -> in the order they came
        self._notices: list[tuple[str, int]] = []  # (address, xid) waiting for their Event

    def record(self, address: str, xid: int) -> XidInfo:
        """Classifies an Xid of the card and keeps what the next pass needs of it."""
        info = xids.classify(xid)
        with self._lock:
            if info.kind in xids.FATAL:
                self._fatal.setdefault(address, []).append(_Fatal(xid))
            elif info.kind is XidClass.UNCLASSIFIED:
                self._notices.append((address, xid))
        return info

    def fatal(self, address: str, uid: str) -> tuple[int, ...]:
        """The fatal Xids of the card whose PhysicalGPU has ``uid``; those recorded for an earlier
        object of the same address are dropped, those not read yet are bound to this one."""
        with self._lock:
            entries = [entry for entry in self._fatal.get(address, []) if entry.uid in (None, uid)]
            for entry in entries:
                entry.uid = uid
            if entries:
                self._fatal[address] = entries
            else:
                self._fatal.pop(address, None)
            return tuple(entry.xid for entry in entries)

    def keep_only(self, addresses: Collection[str]) -> None:
        """Forgets what was read into PhysicalGPUs no longer listed (the card left the node)."""
        with self._lock:
            for address in list(self._fatal):
                if address not in addresses:
                    left = [entry for entry in self._fatal[address] if entry.uid is None]
                    if left:
                        self._fatal[address] = left
                    else:
                        del self._fatal[address]

    def take_notices(self) -> list[tuple[str, int]]:
        with self._lock:
            taken, self._notices = self._notices, []
            return taken
