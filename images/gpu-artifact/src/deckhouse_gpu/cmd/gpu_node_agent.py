# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent: keeps one PhysicalGPU per GPU of this node.

Examples:
  gpu-node-agent --node-name worker-1                      # in-cluster, host root mounted at /
  gpu-node-agent --node-name w1 --host-root /tmp/host --kubeconfig ~/.kube/config
  gpu-node-agent --once --dry-run --host-root /tmp/host --node-name w1   # print, write nothing
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import TextIO

import prometheus_client

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.host.udev_events import UdevUnavailable, watch_pci_events
from deckhouse_gpu.adapters.metrics.api_write_metrics import MeteredKube
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.adapters.process.health_server import serve_health
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics
from deckhouse_gpu.cmd.process import (
    SHUTDOWN_SECONDS,
    add_metrics_address,
    listen_address,
    stop_on_signals,
)
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.host import HostReader, HostUnreadable
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync, read_host
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.informer import Informer

COMPONENT = "gpu-node-agent"
log = logging.getLogger(COMPONENT)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=COMPONENT, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--node-name", default=os.environ.get("NODE_NAME"), help="this node's name (env NODE_NAME)"
    )
    parser.add_argument(
        "--host-root", default=os.environ.get("HOST_ROOT", "/"), help="the host's / as mounted (default /)"
    )
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig file; in-cluster config if unset",
    )
    parser.add_argument("--once", action="store_true", help="one pass, then exit (non-zero if it failed)")
    parser.add_argument(
        "--dry-run", action="store_true", help="with --once: print the objects as YAML, touch no API"
    )
    parser.add_argument(
        "--health-address",
        default=os.environ.get("HEALTH_ADDRESS", "0.0.0.0:8081"),
        help="host:port of /healthz and /readyz (env HEALTH_ADDRESS)",
    )
    add_metrics_address(parser, "127.0.0.1:9081")
    parser.add_argument(
        "--log-level", default=os.environ.get("LOG_LEVEL", "info"), help="debug, info, warning or error"
    )
    parser.add_argument(
        "--absence-threshold",
        type=int,
        default=2,
        help="consecutive scans a card must be missing before deletion",
    )
    parser.add_argument(
        "--resync-seconds",
        type=float,
        default=600.0,
        help="safety rescan interval (events drive everything else)",
    )
    args = parser.parse_args(argv)
    if not args.node_name:
        parser.error("--node-name (or env NODE_NAME) is required")
    if args.dry_run and not args.once:
        parser.error("--dry-run needs --once")
    if args.absence_threshold < 1:
        parser.error("--absence-threshold must be at least 1")
    return args


def dry_run(host: HostReader, node_name: str, out: TextIO) -> int:
    """Prints what would be written; device problems become YAML comments and log lines."""
    try:
        inventory = read_host(host, node_name)
    except HostUnreadable as error:
        log.error("host unreadable", extra={"error": str(error)})
        print(f"# error: {error}", file=out)
        return 1
    print(
        f"# node {node_name}: {len(inventory.gpus)} GPU(s) among {inventory.scanned} PCI functions", file=out
    )
    for problem in inventory.errors:
        log.warning("device skipped", extra={"pciAddress": problem.address, "error": problem.message})
        print(f"# skipped {problem.address}: {problem.message}", file=out)
    print(
        "# ownerReferences to the Node are added when written (the Node's uid comes from the API)", file=out
    )
    import yaml  # noqa: PLC0415 - only the dry run prints YAML; the agent does not load it

    manifests = [gpu.manifest(owner=None) for gpu in inventory.gpus]
    if manifests:
        out.write(yaml.safe_dump_all(manifests, sort_keys=False, explicit_start=True))
    return 0


def run(args: argparse.Namespace, api: KubeAPI, host: HostReader) -> int:
    clock = SystemClock()
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
    metrics = NodeAgentMetrics()
    api = MeteredKube(api, metrics)
    events = EventRecorder(api, COMPONENT, args.node_name, clock)
    # This node's PhysicalGPUs, watched: a pass reads them here, never from the API server.
    cache = Informer(api, PHYSICAL_GPUS, lambda _o, _n: None, label_selector=node_selector(args.node_name))
    sync = InventorySync(
        api,
        host,
        args.node_name,
        events,
        absence_threshold=args.absence_threshold,
        cache=None if args.once else cache,
    )
    health = HealthState()
    settings = LoopSettings(resync_seconds=args.resync_seconds)
    loop = NodeAgentLoop(sync, health, clock, settings, observer=metrics)
    if args.once:
        return 0 if loop.run_once().ok else 1
    stop = threading.Event()
    stop_on_signals(stop, loop.wake)
    servers = [
        serve_health(health, listen_address(args.health_address), clock.monotonic),
        serve_metrics(listen_address(args.metrics_address), metrics.registry),
    ]
    try:
        watch_pci_events(loop.notify_udev, stop)
    except UdevUnavailable as error:
        log.error(
            "no udev events; relying on rescans",
            extra={"error": str(error), "resyncSeconds": args.resync_seconds},
        )
    cache.on_change = sync.cached.observing(loop.on_cached_card) if sync.cached else loop.on_cached_card
    threading.Thread(target=cache.run, args=(stop,), name="watch-physicalgpus", daemon=True).start()
    log.info("started", extra={"node": args.node_name, "hostRoot": args.host_root})
    loop.serve(stop, SHUTDOWN_SECONDS)
    for server in servers:
        server.shutdown()
    log.info("stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    json_logging.configure(COMPONENT, args.log_level)
    host = SysfsHost(args.host_root)
    if args.dry_run:
        return dry_run(host, args.node_name, sys.stdout)
    from deckhouse_gpu.adapters.kube.kube_client import load_kube  # noqa: PLC0415 - dry-run needs no client

    return run(args, load_kube(args.kubeconfig), host)


if __name__ == "__main__":
    sys.exit(main())
