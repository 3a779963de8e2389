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


def stop_on_signals(stop: threading.Event, wake: Callable[[], None] | None = None) -> None:
    """SIGTERM (the kubelet) and SIGINT set ``stop``; ``wake`` interrupts a loop that is waiting."""

    def handle(*_: object) -> None:
        stop.set()
        if wake is not None:
            wake()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)
