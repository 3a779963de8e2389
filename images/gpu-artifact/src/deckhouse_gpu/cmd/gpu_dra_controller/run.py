# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``gpu-dra-controller run``: wiring of the controller, its lease, metrics and webhook."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import prometheus_client

from deckhouse_gpu.adapters.metrics.dra_metrics import DraMetrics
from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics, serve_probes
from deckhouse_gpu.cmd import k8s_version
from deckhouse_gpu.cmd.election import Election, time_left
from deckhouse_gpu.cmd.process import SHUTDOWN_SECONDS, add_metrics_address, listen_address, stop_on_signals
from deckhouse_gpu.domain.allocation.audit import Violation
from deckhouse_gpu.domain.allocation.card_sharing import card_sharing
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorMatcher
from deckhouse_gpu.k8s_semantics.apimachinery.leader_lease import LeaseTimings
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics, version_for
from deckhouse_gpu.ports.clock import Clock, SystemClock
from deckhouse_gpu.ports.kube import KubeAPI, KubeError, Object
from deckhouse_gpu.services.allocation.dra_controller import DraController, DraControllerSettings
from deckhouse_gpu.services.allocation.gpuclass_controller import GpuClassController, GpuClassSettings
from deckhouse_gpu.services.runtime.events import EventRecorder

COMPONENT = "gpu-dra-controller"
LEASE_NAME = "gpu-dra-controller"
VERSION_TTL_SECONDS = 300.0  # an upgrade to 1.35 is noticed within this
log = logging.getLogger(COMPONENT)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--kubeconfig", default=env("KUBECONFIG"), help="in-cluster config if unset")
    parser.add_argument("--namespace", default=env("POD_NAMESPACE", "d8-gpu"), help="namespace of the lease")
    parser.add_argument("--listen-address", default="0.0.0.0:8080", help="/healthz, /readyz")
    add_metrics_address(parser, "127.0.0.1:9080")
    parser.add_argument("--webhook-address", default="0.0.0.0:9443", help="the admission webhook (HTTPS)")
    parser.add_argument("--tls-cert-file", default="/etc/gpu-dra-controller/tls/tls.crt")
    parser.add_argument("--tls-key-file", default="/etc/gpu-dra-controller/tls/tls.key")
    parser.add_argument("--no-webhook", action="store_true", help="do not serve the admission webhook")
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--k8s-version",
        type=_version_or_auto,
        default="auto",
        help=f"allocator semantics: auto (the API server's) or {k8s_version.HELP}",
    )
    parser.add_argument("--log-level", default=env("LOG_LEVEL", "info"))


def _version_or_auto(text: str) -> str:
    return text if text == "auto" else k8s_version.version_argument(text)


class ServerSemantics:
    """The allocator semantics of the API server's version, read again every few minutes."""

    def __init__(self, api: KubeAPI, pinned: str | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.pinned = pinned
        self.clock = clock
        self._cached: tuple[float, Semantics] | None = None

    def __call__(self) -> Semantics:
        if self.pinned:
            return Semantics(self.pinned)
        now = self.clock()
        if self._cached is None or now - self._cached[0] > VERSION_TTL_SECONDS:
            try:
                version = version_for(self.api.server_version()[1])
            except KubeError as error:
                log.warning("server version unknown; assuming 1.35", extra={"error": str(error)})
                version = "1.35"
            self._cached = (now, Semantics(version))
        return self._cached[1]


@functools.cache
def _matcher(consumable_capacity: bool) -> CelMatcher:
    return CelMatcher(consumable_capacity=consumable_capacity)


def matcher_for(semantics: Semantics) -> SelectorMatcher:
    """One matcher per feature set: its engine's compiled expressions outlive each attempt."""
    return _matcher(semantics.consumable)


@dataclass
class RunningDraController:
    controller: DraController
    election: Election
    metrics: DraMetrics
    gpu_classes: GpuClassController

    def health(self) -> tuple[bool, str]:
        """Both loops: a GPUClass watch failing for long (RBAC, the CRD gone) is worth a restart."""
        for probe in (self.controller.health, self.gpu_classes.health):
            healthy, message = probe()
            if not healthy:
                return healthy, message
        return True, "ok"

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """After ``stop`` is set: both loops' workers, then the lease (cmd/election.py)."""
        deadline = time.monotonic() + timeout
        self.controller.join_workers(timeout)
        self.gpu_classes.join_workers(time_left(deadline))
        self.election.end(time_left(deadline), timeout)


def start_dra_controller(
    api: KubeAPI,
    stop: threading.Event,
    namespace: str = "d8-gpu",
    leader_elect: bool = True,
    pinned_version: str | None = None,
    settings: DraControllerSettings | None = None,
    clock: Clock | None = None,
    lease_timings: LeaseTimings | None = None,
    class_settings: GpuClassSettings | None = None,
) -> RunningDraController:
    clock = clock or SystemClock()
    identity = os.environ.get("POD_NAME") or socket.gethostname()
    events = EventRecorder(api, COMPONENT, identity, clock)

    def on_change(leading: bool) -> None:
        # Looked up when called: the controllers need the elector first.
        controller.on_leadership(leading)
        gpu_classes.on_leadership(leading)

    election = Election(api, identity, namespace, clock, LEASE_NAME, leader_elect, on_change, lease_timings)
    leadership = election.leadership

    def exported_claims() -> list[Object] | None:
        return controller.claims.items() if controller.synced() and leadership.is_leader() else None

    def violations() -> list[Violation] | None:
        ready = controller.report.at is not None and leadership.is_leader()
        return controller.report.violations if ready else None

    metrics = DraMetrics(exported_claims, violations, leadership.is_leader, clock)
    controller = DraController(
        api,
        settings or DraControllerSettings(),
        leadership,
        events,
        ServerSemantics(api, pinned_version),
        matcher_for,
        card_sharing,
        metrics,
    )
    # The GPUClasses' DeviceClasses, under the same lease, reading the allocator's slices and nodes.
    gpu_classes = GpuClassController(
        api,
        class_settings or GpuClassSettings(),
        leadership,
        controller,
        _matcher(True),
        clock,
        device_classes=controller.classes,  # one DeviceClass watch for both loops
    )
    controller.class_listeners.append(gpu_classes.on_device_class)
    controller.inventory_listeners.append(gpu_classes.inventory_changed)
    controller.start(stop)
    gpu_classes.start(stop)
    election.start(stop)
    if not leader_elect:
        controller.enqueue_all_when_synced(stop)
        gpu_classes.enqueue_all_when_synced(stop)
    log.info("started", extra={"identity": identity, "namespace": namespace, "leaderElect": leader_elect})
    return RunningDraController(controller, election, metrics, gpu_classes)


def run_in_cluster(args: argparse.Namespace) -> int:
    json_logging.configure(COMPONENT, args.log_level)
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
    from deckhouse_gpu.adapters.kube.kube_client import load_kube  # noqa: PLC0415 - --help needs no client

    api = load_kube(args.kubeconfig)
    stop = threading.Event()
    stop_on_signals(stop)
    pinned = None if args.k8s_version == "auto" else args.k8s_version
    running = start_dra_controller(api, stop, args.namespace, args.leader_elect, pinned)
    controller = running.controller
    servers = [
        # Ready with the allocator's caches alone: a cluster without the GPUClass CRD still allocates.
        serve_probes(listen_address(args.listen_address), running.health, controller.readiness),
        serve_metrics(listen_address(args.metrics_address), running.metrics.registry),
    ]
    webhook = None
    if not args.no_webhook:
        from deckhouse_gpu.adapters.process.admission_server import serve_admission  # noqa: PLC0415
        from deckhouse_gpu.services.allocation.config_admission import review  # noqa: PLC0415

        webhook = serve_admission(
            listen_address(args.webhook_address), args.tls_cert_file, args.tls_key_file, review
        )
    stop.wait()
    running.shutdown()
    for server in servers:
        server.shutdown()
    if webhook is not None:
        webhook.shutdown()
    log.info("stopped")
    return 0
