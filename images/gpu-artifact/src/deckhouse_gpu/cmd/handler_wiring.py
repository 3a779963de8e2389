# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler wiring: which NVML (real or simulated), which cards, which MIG profiles are offered,
and the prestart step."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time

from deckhouse_gpu.adapters.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.inventory.physicalgpu import DriverType
from deckhouse_gpu.domain.offers.class_demand import demand_of, selectors_only
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule, PolicyError, parse_json
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.host import HostUnreadable
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, KubeError
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.services.informer import Informer, OnChange
from deckhouse_gpu.services.prestart import DriverNotFound, PrestartSettings, probe, wait_for_driver
from deckhouse_gpu.services.slice_publisher import MIG_OFFERS, SlicePublisher
from deckhouse_gpu.services.xid_watcher import XidWatcher

log = logging.getLogger("gpu-handler")

DEFAULT_DRIVER_MOUNT = "/driver-root"  # where the pod mounts the host's driver root (DESIGN.md S10.4)


class WiringError(Exception):
    """A setting that cannot work; the message says what to change."""


def add_nvml_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nvml-sim", metavar="MODELS", help="simulated NVML: comma-separated models (a30,t4,...)"
    )
    parser.add_argument(
        "--host-root", help="host / as mounted; with --nvml-sim the cards come from its sysfs"
    )
    parser.add_argument(
        "--driver-root-mount",
        default=os.environ.get("NVIDIA_DRIVER_ROOT_MOUNT", DEFAULT_DRIVER_MOUNT),
        help="where the driver root is mounted; libnvidia-ml.so.1 is loaded from under it",
    )
    parser.add_argument(
        "--nvml-library", help="load this libnvidia-ml.so.1 instead of searching the driver root"
    )


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
    if args.nvml_sim:
        from deckhouse_gpu.adapters.sim.sim_nvml import SimNVMLConfigError, from_model_list  # noqa: PLC0415

        try:
            return from_model_list(
                args.nvml_sim, addresses, node_name=getattr(args, "node_name", None) or "sim-node"
            )
        except SimNVMLConfigError as error:
            raise WiringError(
                f"--nvml-sim: {error} (cards are matched to PCI addresses in sorted order)"
            ) from error
    from deckhouse_gpu.adapters.nvml_real import RealNVML  # noqa: PLC0415 - only real nodes load pynvml

    library = args.nvml_library
    if library is None:
        found = probe(MountedDriverRoot(args.driver_root_mount), "/")
        library = str(found.nvml_library) if found.nvml_library else None
        if library is None:
            log.warning(
                "libnvidia-ml.so.1 not found under the driver root; using the default search path",
                extra={"driverRootMount": args.driver_root_mount},
            )
    return RealNVML(library)


def xid_watcher(nvml: NVML, wait_seconds: float = 1.0) -> XidWatcher:
    """The watcher of the cards' Xid errors (DESIGN.md S4.2.3), on the events of the same NVML."""
    from deckhouse_gpu.adapters.nvml_real import RealNVML  # noqa: PLC0415 - pynvml loads on first use

    if isinstance(nvml, RealNVML):
        from deckhouse_gpu.adapters.nvml_events import RealXidEvents  # noqa: PLC0415

        return XidWatcher(RealXidEvents(nvml), wait_seconds=wait_seconds)
    from deckhouse_gpu.adapters.sim.sim_nvml import SimulatedNVML  # noqa: PLC0415

    if not isinstance(nvml, SimulatedNVML):
        raise WiringError(f"no Xid events for {type(nvml).__name__}")
    return XidWatcher(nvml, wait_seconds=wait_seconds)


def node_gpu_addresses(args: argparse.Namespace, api: KubeAPI) -> list[str]:
    """The cards a simulated NVML should show: NVIDIA-bound GPUs of the host root, or else of the API."""
    if not args.nvml_sim:
        return []
    if args.host_root:
        try:
            scan = SysfsHost(args.host_root).scan_pci()
        except HostUnreadable as error:
            raise WiringError(f"--host-root: {error}") from error
        return sorted(d.address for d in scan.gpus if d.driver == "nvidia")
    try:
        cards = api.list(PHYSICAL_GPUS, label_selector=node_selector(args.node_name)).items
    except KubeError as error:
        raise WiringError(f"cannot list this node's PhysicalGPUs for --nvml-sim: {error}") from error
    return sorted(
        str(status["pciInfo"]["address"])
        for status in ((c.get("status") or {}) for c in cards)
        if (status.get("currentState") or {}).get("driverType") == DriverType.NVIDIA.value
        and (status.get("pciInfo") or {}).get("address")
    )


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
