# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kernel uevents for PCI devices (hot-plug, driver bind/unbind) through pyudev."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often the monitor thread checks for a stop request


class UdevUnavailable(Exception):
    pass


def watch_pci_events(on_event: Callable[[str, str], None], stop: threading.Event) -> threading.Thread:
    """Starts a thread calling ``on_event(action, pci_address)`` for every PCI uevent.

    Listens to the kernel's own uevents (not udevd's), so it works whether or not the host runs
    udevd; the pod needs the host network namespace to receive them.
    """
    try:
        import pyudev  # noqa: PLC0415 - libudev is loaded only when events are wanted
    except ImportError as error:
        raise UdevUnavailable(f"pyudev is not installed: {error}") from error
    try:
        monitor = pyudev.Monitor.from_netlink(pyudev.Context(), source="kernel")
        monitor.filter_by("pci")
        monitor.start()
    except (ImportError, OSError) as error:
        raise UdevUnavailable(f"cannot open the uevent netlink socket: {error}") from error

    def loop() -> None:
        while not stop.is_set():
            try:
                device = monitor.poll(timeout=POLL_SECONDS)
            except OSError as error:  # e.g. ENOBUFS: events were lost; a pass finds the truth
                log.warning("uevent socket error; forcing a pass", extra={"error": str(error)})
                on_event("overflow", "")
                continue
            if device is not None:
                on_event(str(device.action or "change"), str(device.sys_name))

    thread = threading.Thread(target=loop, name="udev-monitor", daemon=True)
    thread.start()
    return thread
