# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``gpu-handler validate-driver``: the driver validator DaemonSet's process.

It checks the driver every ``--interval-seconds`` and answers ``/readyz`` with 200 only while the
last check passed; gpu-controller turns that readiness into each card's ``DriverReady``. Liveness
never fails on a missing driver: restarting the validator cannot install one.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import threading
from collections.abc import Callable

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot, ProcNvidia
from deckhouse_gpu.adapters.process.health_server import serve_health
from deckhouse_gpu.cmd.process import listen_address, stop_on_signals
from deckhouse_gpu.ports.clock import Clock, SystemClock
from deckhouse_gpu.ports.driver_files import DriverTree, KernelView
from deckhouse_gpu.services.inventory.driver_validation import Verdict, validate
from deckhouse_gpu.services.runtime.health import HealthState

log = logging.getLogger("gpu-handler")


def add_arguments(parser: argparse.ArgumentParser, default_mount: str) -> None:
    env = os.environ.get
    parser.add_argument("--driver-root-mount", default=env("NVIDIA_DRIVER_ROOT_MOUNT", default_mount))
    parser.add_argument(
        "--driver-root", default=env("NVIDIA_DRIVER_ROOT", "/"), help="the driver root on the host"
    )
    parser.add_argument("--proc", default="/proc", help="where /proc is (the host kernel's driver files)")
    parser.add_argument("--interval-seconds", type=float, default=30.0)
    parser.add_argument("--health-address", default=env("HEALTH_ADDRESS", "0.0.0.0:8083"))
    parser.add_argument("--once", action="store_true", help="check once; exit 0 when the driver is ready")


def check_forever(
    tree: DriverTree,
    kernel: KernelView,
    driver_root: str,
    health: HealthState,
    *,
    clock: Clock,
    stop: threading.Event,
    interval_s: float,
    on_verdict: Callable[[Verdict], None] | None = None,
) -> None:
    """Checks until ``stop``; logs only when the verdict changes, so a steady node stays quiet."""
    previous: Verdict | None = None
    while not stop.is_set():
        verdict = validate(tree, driver_root, kernel.nvidia_module())
        health.record(verdict.ready, None if verdict.ready else verdict.summary, clock.monotonic())
        if verdict != previous:
            level = logging.INFO if verdict.ready else logging.WARNING
            log.log(level, "driver %s: %s", "ready" if verdict.ready else "not ready", verdict.summary)
            for problem in verdict.problems:
                log.log(level, "hint: %s", problem)
            previous = verdict
        if on_verdict is not None:
            on_verdict(verdict)
        stop.wait(interval_s)


def run(args: argparse.Namespace) -> int:
    tree = MountedDriverRoot(args.driver_root_mount)
    kernel = ProcNvidia(args.proc)
    if args.once:
        verdict = validate(tree, args.driver_root, kernel.nvidia_module())
        print(verdict.summary)
        for problem in verdict.problems:
            print(f"hint: {problem}")
        return 0 if verdict.ready else 1
    clock = SystemClock()
    health = HealthState()
    stop = threading.Event()
    stop_on_signals(stop)
    address = listen_address(args.health_address)
    server = serve_health(health, address, clock.monotonic, unhealthy_after=math.inf)
    check_forever(
        tree, kernel, args.driver_root, health, clock=clock, stop=stop, interval_s=args.interval_seconds
    )
    server.shutdown()
    return 0
