# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler: NVML capabilities, health, DRA offers and the kubelet plugin of this node's GPUs.

gpu-handler run --node-name w1                                 # in-cluster, real NVML
gpu-handler snapshot --dry-run --physicalgpus pgpu.yaml [--assume-driver-ready]
gpu-handler prestart --driver-root /run/nvidia/driver          # init container: wait for the driver
gpu-handler prestart --driver-root /run/nvidia/driver          # init container: wait for the driver
gpu-handler validate-driver --driver-root /                    # the driver validator DaemonSet
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, TextIO

import prometheus_client

from deckhouse_gpu.adapters.metrics.api_write_metrics import MeteredKube
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredNVML
from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.adapters.process.health_server import serve_health
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics
from deckhouse_gpu.cmd import driver_validator, k8s_version
from deckhouse_gpu.cmd.gpu_handler import wiring
from deckhouse_gpu.cmd.gpu_handler.node_hardware import REAL, NodeHardware
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import add_plugin_arguments, build_prepare
from deckhouse_gpu.cmd.process import (
    SHUTDOWN_SECONDS,
    add_metrics_address,
    listen_address,
    stop_on_signals,
)
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.domain.offers.slice_layout import LayoutError
from deckhouse_gpu.ports.clock import SystemClock, rfc3339
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.services.prepare.sharing_keeper import start_daemon_keeper
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.node_caches import HandlerCaches
from deckhouse_gpu.services.publishing.other_owner import OwnerBoard
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.publishing.snapshot_preview import preview
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState

if TYPE_CHECKING:
    from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin

COMPONENT = "gpu-handler"
# How soon an MPS daemon Pod deleted under running shares is created again.
MPS_KEEPER_SECONDS = 15.0
log = logging.getLogger(COMPONENT)


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def parse_args(argv: list[str] | None, hardware: NodeHardware = REAL) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=COMPONENT, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="keep this node's PhysicalGPUs up to date")
    run.add_argument("--node-name", default=os.environ.get("NODE_NAME"), help="this node (env NODE_NAME)")
    run.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig; in-cluster if unset"
    )
    wiring.add_nvml_arguments(run, hardware)
    wiring.add_policy_arguments(run)
    run.add_argument(
        "--offers-follow-classes",
        choices=("true", "false"),
        default=os.environ.get("OFFERS_FOLLOW_CLASSES") or "true",
        help="publish only the offers some DeviceClass of the cluster may select, following a "
        "watch of DeviceClasses (env OFFERS_FOLLOW_CLASSES; DESIGN.md D19)",
    )
    run.add_argument(
        "--health-address",
        default=os.environ.get("HEALTH_ADDRESS", "0.0.0.0:8082"),
        help="host:port of /healthz and /readyz (env HEALTH_ADDRESS)",
    )
    add_metrics_address(run, "127.0.0.1:9082")
    run.add_argument(
        "--heartbeat-seconds", type=_positive, default=60.0, help="re-check for silent NVML failures"
    )
    run.add_argument(
        "--health-grace-seconds",
        type=float,
        default=30.0,
        help="keep the last health this long on NVML failures",
    )
    run.add_argument("--backoff-seconds", default="5,10,30,60,300", help="retry delays of a failing card")
    run.add_argument(
        "--partitionable",
        choices=("auto", "on", "off"),
        default=os.environ.get("DRA_PARTITIONABLE", "auto"),
        help="publish MIG offers with shared counters (auto: until the API server drops the fields)",
    )
    run.add_argument(
        "--consumable-capacity",
        choices=("auto", "on", "off"),
        default=os.environ.get("DRA_CONSUMABLE_CAPACITY", "auto"),
        help="publish shared offers on sharing nodes (auto: until the API server drops the fields)",
    )
    run.add_argument(
        "--device-taints",
        choices=("auto", "on", "off"),
        default=os.environ.get("DRA_DEVICE_TAINTS", "auto"),
        help="offer unhealthy cards tainted, not withdrawn (auto: until the API server drops taints)",
    )

    add_plugin_arguments(run)

    render = commands.add_parser(
        "render-slices", help="print the ResourceSlices for given PhysicalGPUs, touch no API"
    )
    render.add_argument(
        "--k8s-version", required=True, type=k8s_version.minor_argument, help=k8s_version.HELP
    )
    render.add_argument(
        "--physicalgpus", required=True, help="YAML file: PhysicalGPU objects, a List, or several documents"
    )
    render.add_argument(
        "--no-consumable-capacity", action="store_true", help="as if DRAConsumableCapacity were off"
    )
    render.add_argument(
        "--no-partitionable", action="store_true", help="as if DRAPartitionableDevices were off"
    )
    render.add_argument(
        "--no-device-taints",
        action="store_true",
        help="as if DRADeviceTaints were off: unhealthy cards are left out, not tainted",
    )
    render.add_argument(
        "--node-labels", default="", help="labels of the nodes, e.g. gpu.deckhouse.io/sharing=true"
    )
    wiring.add_policy_arguments(render)

    snapshot = commands.add_parser("snapshot", help="print what would be written, touch no API")
    snapshot.add_argument(
        "--dry-run", action="store_true", required=True, help="required: snapshot only previews"
    )
    snapshot.add_argument(
        "--physicalgpus", required=True, help="YAML file: PhysicalGPU objects, a List, or several documents"
    )
    snapshot.add_argument("--assume-driver-ready", action="store_true", help="treat DriverReady as True")
    wiring.add_nvml_arguments(snapshot, hardware)

    prestart = commands.add_parser(
        "prestart", help="wait until the driver root has nvidia-smi and libnvidia-ml.so.1"
    )
    wiring.add_prestart_arguments(prestart)

    validator = commands.add_parser(
        "validate-driver", help="the driver validator: ready while the driver root and kernel module agree"
    )
    driver_validator.add_arguments(validator, wiring.DEFAULT_DRIVER_MOUNT)

    args = parser.parse_args(argv)
    if args.command == "run" and not args.node_name:
        parser.error("run: --node-name (or env NODE_NAME) is required")
    if args.command == "run":
        try:
            args.health = HealthSettings(
                args.health_grace_seconds, tuple(float(x) for x in args.backoff_seconds.split(","))
            )
        except ValueError as error:
            parser.error(f"run: bad health settings: {error}")
    return args


def snapshot(args: argparse.Namespace, out: TextIO) -> int:
    from deckhouse_gpu.cmd.manifest_io import load_physicalgpus, write_yaml  # noqa: PLC0415 - see there

    try:
        objects = load_physicalgpus(args.physicalgpus)
        addresses = sorted(
            str(o["status"]["pciInfo"]["address"])
            for o in objects
            if (o.get("status") or {}).get("pciInfo", {}).get("address")
        )
        nvml = wiring.make_nvml(args, addresses)
    except (ValueError, wiring.WiringError) as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return 2
    result = preview(objects, nvml, rfc3339(SystemClock().now()), args.assume_driver_ready)
    for problem in result.problems:
        print(f"# NVML: {problem}", file=out)
    if result.objects:
        write_yaml(result.objects, out)
    return 0


def render_slices(args: argparse.Namespace, out: TextIO) -> int:
    from deckhouse_gpu.cmd.manifest_io import load_physicalgpus, write_yaml  # noqa: PLC0415 - see there

    try:
        objects = load_physicalgpus(args.physicalgpus)
        labels = dict(item.split("=", 1) for item in args.node_labels.split(",") if item)
    except ValueError as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return 2
    try:
        slices = render_nodes(
            objects,
            args.k8s_version,
            labels,
            not args.no_partitionable,
            not args.no_consumable_capacity,
            not args.no_device_taints,
            args.mig_profiles,
            args.mig_offers,
        )
    except LayoutError as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return 2
    # Documents, like every other command prints objects: kubectl apply -f and the other
    # commands' --slices read them as they are.
    write_yaml(slices, out)
    return 0


def serve_kubelet(
    args: argparse.Namespace,
    api: KubeAPI,
    nvml: NVML,
    clock: SystemClock,
    loop: HandlerLoop,
    events: EventRecorder,
    metrics: HandlerMetrics,
    device_health: DeviceHealthBoard,
    stop: threading.Event,
) -> RunningPlugin:
    """The kubelet plugin: the prepare service, its start-up clean-up and its gRPC sockets."""
    prepare, paths, write_base_spec = build_prepare(
        args, api, nvml, clock, offers=loop, metrics=metrics
    )  # offers follow what is prepared: prepare reports each change to the loop (DESIGN.md D2 b)
    loop.after_publish = write_base_spec
    prepare.events = events  # MPS daemons recreated: said on the claims that use them
    assert loop.owners is not None
    prepare.holds = loop.owners.held  # no claim is prepared on another owner's card (DESIGN.md D16)
    loop.prepared_claims = lambda: list(prepare.claim_names)
    wiring.prime_owners(loop.owners, api, args.node_name)  # before the clean-up below
    try:
        prepare.start()  # roll back what a crash or a reboot left, before the kubelet calls again
    except Exception:  # the kubelet's next call rolls back its own claim; keep serving
        log.exception("start-up cleanup failed; continuing")
    # grpcio only where the kubelet's sockets are served: the validate-driver DaemonSet and the
    # prestart init container run this command on every GPU node too, and do without it.
    from deckhouse_gpu.adapters.kubelet.kubelet_grpc import start_plugin  # noqa: PLC0415

    plugin = start_plugin(prepare, paths, health=device_health)
    start_daemon_keeper(prepare, stop, MPS_KEEPER_SECONDS)
    return plugin


def run(args: argparse.Namespace, api: KubeAPI) -> int:
    clock = SystemClock()
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
    metrics = HandlerMetrics()
    api = MeteredKube(api, metrics)
    try:
        addresses = wiring.node_gpu_addresses(args, api)
        nvml = wiring.make_nvml(args, addresses)
    except wiring.WiringError as error:
        print(f"{COMPONENT}: {error}", file=sys.stderr)
        return 2
    events = EventRecorder(api, COMPONENT, args.node_name, clock)
    xids = wiring.xid_watcher(args, nvml)  # a fatal Xid makes its card unhealthy (DESIGN.md S4.2.3)
    nvml_metered = MeteredNVML(nvml, metrics)
    # Every pass reads these watch caches, never the API (services/publishing/node_caches.py).
    caches = HandlerCaches(api, args.node_name, *(lambda _o, _n: None,) * 3)
    capabilities = CapabilitiesPass(
        api, nvml_metered, args.node_name, events, clock, args.health, xids.board, cached=caches.card_writes
    )
    features = PublisherSettings(
        args.partitionable, args.consumable_capacity, args.device_taints, args.mig_profiles, args.mig_offers
    )
    publisher = SlicePublisher(api, args.node_name, events, features, cached=caches.slice_writes)
    health = HealthState()
    settings = HandlerSettings(args.heartbeat_seconds, args.health)
    # the kubelet's health stream (KUBERNETES-FACTS.md F6.3)
    device_health = DeviceHealthBoard(args.node_name)
    loop = HandlerLoop(
        capabilities, health, clock, settings, publisher,
        device_health=device_health, observer=metrics, xid_watcher=xids, caches=caches,
    )  # fmt: skip
    written = capabilities.written_versions.append
    loop.owners = OwnerBoard(
        api, args.node_name, events, clock, wiring.gpu_processes(args, nvml), metrics, written
    )
    caches.follow(loop)
    # Back after losing the server: it may have been upgraded, and the layout follows its version.
    caches.slices.on_resumed = publisher.forget_version
    stop = threading.Event()
    plugin = None
    if not args.no_kubelet_plugin:
        plugin = serve_kubelet(args, api, nvml, clock, loop, events, metrics, device_health, stop)
    stop_on_signals(stop, loop.wake)
    registered = plugin.registered.is_set if plugin is not None else None
    servers = [
        serve_health(health, listen_address(args.health_address), clock.monotonic, also_ready=registered),
        serve_metrics(listen_address(args.metrics_address), metrics.registry),
    ]
    if args.offers_follow_classes == "true":
        wiring.follow_device_classes(api, publisher, loop.on_class_change, stop)
    caches.start(stop)
    watching = xids.start(stop)
    loop.serve(stop, SHUTDOWN_SECONDS)
    watching.join(xids.wait_seconds * 3)  # its waits are bounded: it sees the stop within one
    if plugin is not None:
        plugin.stop()
    for server in servers:
        server.shutdown()
    log.info("stopped")
    return 0


def main(argv: list[str] | None = None, out: TextIO | None = None, hardware: NodeHardware = REAL) -> int:
    """gpu-handler on the node's own cards; the simulator passes its simulated host's hardware."""
    out = out or sys.stdout  # looked up per call: tests and callers may have replaced it
    args = parse_args(argv, hardware)
    json_logging.configure(COMPONENT, args.log_level)
    if args.command == "snapshot":
        return snapshot(args, out)
    if args.command == "prestart":
        return wiring.prestart(args)
    if args.command == "validate-driver":
        return driver_validator.run(args)
    if args.command == "render-slices":
        return render_slices(args, out)
    from deckhouse_gpu.adapters.kube.kube_client import load_kube  # noqa: PLC0415 - only the run command needs it

    return run(args, load_kube(args.kubeconfig))


if __name__ == "__main__":
    sys.exit(main())
