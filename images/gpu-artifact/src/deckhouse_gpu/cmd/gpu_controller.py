# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-controller: keeps the DriverReady condition of every PhysicalGPU and exports inventory metrics.

Examples:
  gpu-controller                                        # in-cluster, leader election on
  gpu-controller --kubeconfig ~/.kube/config --no-leader-elect --listen-address 127.0.0.1:8080
  curl -s 127.0.0.1:9080/metrics                        # its metrics: on loopback by default
  gpu-controller --namespace d8-gpu --validator-selector app=nvidia-driver-validator
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

import prometheus_client

from deckhouse_gpu.adapters.metrics.controller_metrics import ControllerMetrics
from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics, serve_probes
from deckhouse_gpu.cmd.election import Election, time_left
from deckhouse_gpu.cmd.process import SHUTDOWN_SECONDS, add_metrics_address, listen_address, stop_on_signals
from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import parse_selector
from deckhouse_gpu.k8s_semantics.apimachinery.leader_lease import LeaseTimings
from deckhouse_gpu.ports.clock import Clock, SystemClock
from deckhouse_gpu.ports.kube import KubeAPI, Object
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings, GpuController
from deckhouse_gpu.services.runtime.events import EventRecorder

COMPONENT = "gpu-controller"
LEASE_NAME = "gpu-controller"
log = logging.getLogger(COMPONENT)


def default_identity() -> str:
    return os.environ.get("POD_NAME") or socket.gethostname()


@dataclass(frozen=True)
class ControllerOptions:
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    leader_elect: bool = True
    identity: str = field(default_factory=default_identity)
    lease_timings: LeaseTimings = field(default_factory=LeaseTimings)


@dataclass
class RunningController:
    """A started controller: what the simulator and the tests hold on to."""

    controller: GpuController
    election: Election
    metrics: ControllerMetrics

    def is_leader(self) -> bool:
        return self.election.is_leader()

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """After ``stop`` is set: lets the workers finish, then frees the lease for a follower."""
        deadline = time.monotonic() + timeout
        self.controller.join_workers(timeout)
        self.election.end(time_left(deadline), timeout)


def start_controller(
    api: KubeAPI, stop: threading.Event, options: ControllerOptions | None = None, clock: Clock | None = None
) -> RunningController:
    """Runs gpu-controller in this process against ``api`` until ``stop`` is set (non-blocking)."""
    options = options or ControllerOptions()
    clock = clock or SystemClock()
    events = EventRecorder(api, COMPONENT, options.identity, clock)

    def on_change(leading: bool) -> None:
        controller.on_leadership(leading)  # looked up when called: the controller needs the elector first

    election = Election(
        api,
        options.identity,
        options.settings.namespace,
        clock,
        LEASE_NAME,
        options.leader_elect,
        on_change,
        options.lease_timings,
    )
    leadership = election.leadership

    def exported_cards() -> list[Object] | None:
        return controller.cards.items() if controller.synced() and leadership.is_leader() else None

    metrics = ControllerMetrics(exported_cards, leadership.is_leader)
    controller = GpuController(api, options.settings, leadership, events, clock, metrics)
    controller.start(stop)
    election.start(stop)
    log.info(
        "started",
        extra={
            "identity": options.identity,
            "namespace": options.settings.namespace,
            "validatorSelector": options.settings.validator_selector,
            "leaderElect": options.leader_elect,
        },
    )
    return RunningController(controller, election, metrics)


def run_controller(
    api: KubeAPI,
    stop: threading.Event,
    options: ControllerOptions | None = None,
    listen: tuple[str, int] | None = None,
    metrics: tuple[str, int] | None = None,
) -> None:
    """Blocks until ``stop``; serves /healthz and /readyz on ``listen`` and /metrics on
    ``metrics`` when given."""
    running = start_controller(api, stop, options)
    servers: list[ThreadingHTTPServer] = []
    if listen is not None:
        servers.append(serve_probes(listen, running.controller.health, running.controller.readiness))
    if metrics is not None:
        servers.append(serve_metrics(metrics, running.metrics.registry))
    stop.wait()
    running.shutdown()
    for server in servers:
        server.shutdown()
    log.info("stopped")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=COMPONENT, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="in-cluster config if unset"
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "d8-gpu"),
        help="namespace of the validator pods and the lease (env POD_NAMESPACE, default d8-gpu)",
    )
    parser.add_argument(
        "--validator-selector",
        default="app=nvidia-driver-validator",
        help="label selector of the driver validator pods",
    )
    parser.add_argument(
        "--listen-address",
        default="0.0.0.0:8080",  # probed from outside the pod
        help="host:port of /healthz and /readyz",
    )
    add_metrics_address(parser, "127.0.0.1:9080")
    parser.add_argument(
        "--log-level", default=os.environ.get("LOG_LEVEL", "info"), help="debug, info, warning, error"
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect one working replica through the coordination.k8s.io Lease gpu-controller",
    )
    parser.add_argument("--resync-seconds", type=float, default=300.0, help="safety resync interval")
    args = parser.parse_args(argv)
    try:
        parse_selector(args.validator_selector)
    except ValueError as error:
        parser.error(f"--validator-selector: {error}")
    for flag in ("listen", "metrics"):
        try:
            setattr(args, flag, listen_address(getattr(args, f"{flag}_address")))
        except ValueError as error:
            parser.error(f"--{flag}-address: {error}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    json_logging.configure(COMPONENT, args.log_level)
    # The *_created series double the output for nothing Prometheus uses with the text format.
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
    from deckhouse_gpu.adapters.kube.kube_client import load_kube  # noqa: PLC0415 - --help needs no client

    api = load_kube(args.kubeconfig)
    stop = threading.Event()
    stop_on_signals(stop)
    settings = ControllerSettings(
        namespace=args.namespace,
        validator_selector=args.validator_selector,
        resync_seconds=args.resync_seconds,
    )
    options = ControllerOptions(settings, leader_elect=args.leader_elect)
    run_controller(api, stop, options, args.listen, args.metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
