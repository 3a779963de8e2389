# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler wiring: the node's NVML (of the hardware ``node_hardware`` names), which MIG profiles
are offered, and the prestart step."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.cmd.gpu_handler import node_hardware
from deckhouse_gpu.cmd.gpu_handler.node_hardware import NodeHardware
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.offers.class_demand import demand_of, selectors_only
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule, PolicyError, parse_json
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, KubeAPI, KubeError, NotFound
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.ports.vfio import GpuProcesses
from deckhouse_gpu.services.publishing.other_owner import OwnerBoard
from deckhouse_gpu.services.publishing.prestart import DriverNotFound, PrestartSettings, wait_for_driver
from deckhouse_gpu.services.publishing.slice_publisher import MIG_OFFERS, SlicePublisher
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.informer import Informer, OnChange

log = logging.getLogger("gpu-handler")

DEFAULT_DRIVER_MOUNT = "/driver-root"  # where the pod mounts the host's driver root (DESIGN.md S10.4)


class WiringError(Exception):
    """A setting that cannot work; the message says what to change."""


def add_nvml_arguments(parser: argparse.ArgumentParser, hardware: NodeHardware) -> None:
    parser.add_argument("--host-root", help="host / as mounted (a simulated host's root, in the simulator)")
    parser.add_argument(
        "--driver-root-mount",
        default=os.environ.get("NVIDIA_DRIVER_ROOT_MOUNT", DEFAULT_DRIVER_MOUNT),
        help="where the driver root is mounted; libnvidia-ml.so.1 is loaded from under it",
    )
    hardware.add_arguments(parser)
    parser.set_defaults(hardware=hardware)


def mig_profile_rules(text: str) -> tuple[MigProfileRule, ...]:
    """The --mig-profiles value: JSON rules (ModuleConfig dra.migProfiles, passed on by the hook
    derive_settings and the DaemonSet's MIG_PROFILES); a malformed one stops the handler at once."""
    try:
        return parse_json(text)
    except PolicyError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mig-profiles",
        type=mig_profile_rules,
        default=os.environ.get("MIG_PROFILES", ""),
        metavar="JSON",
        help="MIG profiles offered per device and node labels: "
        '[{"device": ..., "nodeSelector": {...}, "profiles": [...]}] (env MIG_PROFILES; default: all)',
    )
    parser.add_argument(
        "--mig-offers",
        choices=MIG_OFFERS,
        default=os.environ.get("MIG_OFFERS") or "AllNodes",
        help="which nodes offer dynamic MIG: AllNodes (unless labelled gpu.deckhouse.io/mig=false) "
        "or OptIn (only nodes labelled gpu.deckhouse.io/mig=true) (env MIG_OFFERS)",
    )


def follow_device_classes(
    api: KubeAPI,
    publisher: SlicePublisher,
    on_change: OnChange,
    stop: threading.Event,
    wait_seconds: float = 10.0,
) -> Informer:
    """The cluster's DeviceClasses, watched (one cluster-scoped watch per node; a cache of their
    selectors only), as the publisher's demand (DESIGN.md D19). Until the first list succeeds the
    demand is unknown and every offer is published; the first pass waits a little for it, so that
    a starting handler does not publish the whole layout only to take most of it back."""
    informer = Informer(api, DEVICE_CLASSES, on_change, transform=selectors_only)
    publisher.demand = lambda: demand_of(informer.items()) if informer.synced.is_set() else None
    threading.Thread(target=informer.run, args=(stop,), name="watch-deviceclasses", daemon=True).start()
    deadline = time.monotonic() + wait_seconds
    while not informer.synced.is_set() and time.monotonic() < deadline:
        if informer.failing_for(time.monotonic()) > 0:  # no rights yet, or an API without DRA
            log.warning("DeviceClasses cannot be read; publishing every offer until they can")
            break
        informer.synced.wait(0.05)
    return informer


def add_prestart_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--driver-root-mount", default=os.environ.get("NVIDIA_DRIVER_ROOT_MOUNT", DEFAULT_DRIVER_MOUNT)
    )
    parser.add_argument(
        "--driver-root",
        default=os.environ.get("NVIDIA_DRIVER_ROOT", "/"),
        help="the driver root on the host (for hints)",
    )
    parser.add_argument("--interval-seconds", type=float, default=10.0)
    parser.add_argument(
        "--max-attempts", type=int, default=None, help="give up after this many (default: never)"
    )


def make_nvml(args: argparse.Namespace, addresses: list[str]) -> NVML:
    return node_hardware.of(args).nvml(args, addresses)


def xid_watcher(args: argparse.Namespace, nvml: NVML, wait_seconds: float = 1.0) -> XidWatcher:
    """The watcher of the cards' Xid errors (DESIGN.md S4.2.3), on the events of the same NVML."""
    return XidWatcher(node_hardware.of(args).xid_events(nvml), wait_seconds=wait_seconds)


def node_gpu_addresses(args: argparse.Namespace, api: KubeAPI) -> list[str]:
    """The cards NVML should show where it cannot enumerate them itself (a simulated host)."""
    return node_hardware.of(args).card_addresses(args, api)


def prestart(args: argparse.Namespace) -> int:
    """Waits for the driver; prints the library path the handler will load."""
    settings = PrestartSettings(interval_s=args.interval_seconds, max_attempts=args.max_attempts)
    try:
        files = wait_for_driver(
            MountedDriverRoot(args.driver_root_mount),
            args.driver_root,
            settings,
            clock=SystemClock(),
            sleep=time.sleep,
            emit=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except DriverNotFound as error:
        print(f"gpu-handler prestart: {error}", file=sys.stderr)
        return 1
    print(f"nvidia-smi: {files.nvidia_smi}\nlibnvidia-ml.so.1: {files.nvml_library}")
    return 0


def gpu_processes(args: argparse.Namespace, nvml: NVML) -> GpuProcesses | None:
    """Who runs on each card, through the same NVML as passthrough asks it: processes on a card no
    claim of this node is prepared on mean another owner uses it (DESIGN.md D16). None where the
    node's hardware has no such view (a simulated node without a host)."""
    found = node_hardware.of(args).vfio(args, nvml, Path(args.host_root or "/"))
    return found[1] if found is not None else None


def prime_owners(board: OwnerBoard, api: KubeAPI, node_name: str) -> None:
    """The cards another owner holds, known before prepare's clean-up at start, which must leave
    their MIG instances and settings alone (DESIGN.md D16)."""
    try:
        cards = api.list(PHYSICAL_GPUS, label_selector=node_selector(node_name)).items
        # Listed by its name (an indexed field), as the Node watch reads it: gpu-handler may not get Nodes.
        nodes = api.list(NODES, field_selector=f"metadata.name={node_name}").items
        if not nodes:
            raise NotFound(f"Node {node_name} not found")
        board.prime(cards, nodes[0])
    except KubeError as error:  # the clean-up then finds no cards either: it lists them too
        log.warning("other owners not known at start", extra={"error": str(error)})
