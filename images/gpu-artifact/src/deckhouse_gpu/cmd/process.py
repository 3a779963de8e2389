# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What every long-running component does the same way: stop on signals, parse listen addresses."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from collections.abc import Callable


def listen_address(text: str) -> tuple[str, int]:
    """``host:port`` (``:8081`` means every interface); ValueError naming the bad part."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not host:port")
    return host or "0.0.0.0", int(port)  # noqa: S104 - probes and scrapes come from outside the pod


def add_metrics_address(parser: argparse.ArgumentParser, default: str) -> None:
    """``--metrics-address`` (env METRICS_ADDRESS): where ``/metrics`` listens, apart from the
    probes. Loopback by default: in the pod, kube-rbac-proxy serves it to Prometheus over HTTPS
    and checks who asks (templates/README.md)."""
    parser.add_argument(
        "--metrics-address",
        default=os.environ.get("METRICS_ADDRESS", default),
        help=f"host:port of /metrics (env METRICS_ADDRESS, default {default})",
    )


# How long a stopping component waits for each piece of work in flight (a pass, a controller's
# reconciles with the lease's renew loop, then the lease's release). A request to an API server
# that does not answer lasts the client's read timeout (30 s, the kubelet's whole grace period):
# the process does not wait for it (DESIGN.md D18). The work is level-triggered, so the next
# process (or leader) redoes what was left, and a lease left unreleased expires.
SHUTDOWN_SECONDS = 2.0

# The signals that stop a component: the kubelet's SIGTERM, and Ctrl-C when run by hand.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_stop_lock = threading.Lock()  # taken by threads only, never inside a signal handler
_stops: list[tuple[threading.Event, Callable[[], None] | None]] = []


def stop_on_signals(stop: threading.Event, wake: Callable[[], None] | None = None) -> None:
    """SIGTERM (the kubelet) and SIGINT set ``stop``; ``wake`` interrupts a loop that is waiting.

    Neither runs in the signal handler: a Python handler runs on the main thread between two
    bytecodes, possibly while that thread holds the very lock ``wake`` or ``stop.set()`` needs
    (a ``queue.Queue``'s, an ``Event``'s), and then waits for itself forever (DESIGN.md D18).
    The interpreter's C-level handler writes the signal's number to a pipe
    (``signal.set_wakeup_fd``), and a thread of its own reads it and stops the component like any
    other thread would. Must be called from the main thread, as ``signal.signal`` must.
    """
    with _stop_lock:
        first = not _stops
        _stops.append((stop, wake))
    if not first:
        return  # one relay per process; a later caller (an in-process test) joins it
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # set_wakeup_fd's demand: a full pipe never blocks the handler
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in STOP_SIGNALS:
        # A Python handler is what makes the interpreter catch the signal (and write the pipe);
        # it does nothing itself, so it can take no lock.
        signal.signal(signum, _noop_handler)
    threading.Thread(target=_relay_signals, args=(read_end,), name="signals", daemon=True).start()


def _noop_handler(*_: object) -> None:
    """The work is done by ``_relay_signals``, outside the handler."""


def _relay_signals(read_end: int) -> None:
    stopping = {int(signum) for signum in STOP_SIGNALS}
    while True:
        received = os.read(read_end, 64)
        if not received:
            return
        if stopping.isdisjoint(received):
            continue  # another signal with a Python handler, which the interpreter handles
        with _stop_lock:
            subscribers = list(_stops)
        for stop, wake in subscribers:
            stop.set()
            if wake is not None:
                wake()
