# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Keeps the MPS daemons that prepared claims use running: a daemon Pod deleted by hand or
evicted is created again, and its claims get an Event (docs/SHARING.md)."""

from __future__ import annotations

import logging
import threading
from typing import Protocol

log = logging.getLogger(__name__)


class DaemonKeeper(Protocol):
    def keep_daemons(self) -> list[str]: ...


def keep_daemons_until(keeper: DaemonKeeper, stop: threading.Event, interval: float) -> None:
    """Calls ``keep_daemons`` every ``interval`` seconds until ``stop`` is set; a failed round is
    logged and the next one tries again (the API server or the node lock may be busy)."""
    while not stop.wait(interval):
        try:
            keeper.keep_daemons()
        except Exception:
            log.exception("keeping the MPS daemons failed; trying again")


def start_daemon_keeper(keeper: DaemonKeeper, stop: threading.Event, interval: float) -> threading.Thread:
    thread = threading.Thread(
        target=keep_daemons_until, args=(keeper, stop, interval), name="mps-keeper", daemon=True
    )
    thread.start()
    return thread
