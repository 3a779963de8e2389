# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's kubelet plugin wiring: paths, MIG control, sharing, CDI, checkpoint and lock.

With ``--host-root DIR`` every host path (kubelet directories, CDI root, checkpoint, /dev, /proc
and the driver root) is taken under DIR, so the whole prepare path runs on a simulated node; with
``--nvml-sim`` too, the simulated cards' MIG state is kept in DIR/var/lib/gpu-sim/mig-state.json,
so it outlives a killed handler as a real GPU's does, and so are the cards' sharing settings
(DIR/var/lib/gpu-sim/sharing-state.json); MPS daemons are Pods in ``--namespace`` either way.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from pathlib import Path

from deckhouse_gpu.adapters.files.cdi_discovery import CdiDiscovery, DiscoveryError, stage_cdi_hook
from deckhouse_gpu.adapters.files.cdi_writer import CdiWriter
from deckhouse_gpu.adapters.files.checkpoint_file import FileCheckpointStore
from deckhouse_gpu.adapters.files.claim_cdi_files import FileClaimCDI
from deckhouse_gpu.adapters.files.device_metadata_files import FileDeviceMetadata
from deckhouse_gpu.adapters.files.node_lock import NodeLock
from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredCheckpointStore, MeteredMig
from deckhouse_gpu.cmd.gpu_handler import node_hardware
from deckhouse_gpu.cmd.gpu_handler.vfio_wiring import add_vfio_arguments, vfio_side
from deckhouse_gpu.domain.prepare.container.cdi_spec import CardNode, base_spec
from deckhouse_gpu.ports.checkpoint import CheckpointStore
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.dra_plugin import PluginPaths
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.services.prepare.service import OfferFollower, PrepareService
from deckhouse_gpu.services.prepare.sharing_host import SharingHost

DRIVER = "gpu.deckhouse.io"

log = logging.getLogger(__name__)


def add_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--no-kubelet-plugin", action="store_true", help="publish only; do not serve the kubelet"
    )
    parser.add_argument("--plugin-dir", default=f"/var/lib/kubelet/plugins/{DRIVER}")
    parser.add_argument("--registry-dir", default="/var/lib/kubelet/plugins_registry")
    parser.add_argument("--cdi-root", default=env("CDI_ROOT", "/etc/cdi"), help="/etc/cdi or /var/run/cdi")
    parser.add_argument(
        "--host-driver-root", default=env("HOST_DRIVER_ROOT", "/"), help="the driver root as the host sees it"
    )
    parser.add_argument(
        "--cdi-hook-path", default=env("NVIDIA_CDI_HOOK_PATH") or None, help="nvidia-cdi-hook on the host"
    )
    parser.add_argument(
        "--image-cdi-hook",
        default="/usr/bin/nvidia-cdi-hook",
        help="the hook in this image, staged when needed",
    )
    parser.add_argument(
        "--pod-uid", default=env("POD_UID") or None, help="socket names for rolling updates (env POD_UID)"
    )
    parser.add_argument(
        "--no-device-metadata",
        action="store_true",
        default=env("DEVICE_METADATA", "true").lower() == "false",
        help="give containers no device metadata files (KEP-5304; env DEVICE_METADATA=false)",
    )
    parser.add_argument(
        "--namespace",
        default=env("POD_NAMESPACE", "d8-gpu"),
        help="where the MPS daemon Pods go (env POD_NAMESPACE)",
    )
    parser.add_argument(
        "--mps-image", default=env("MPS_IMAGE", ""), help="image of the MPS daemon Pods (env MPS_IMAGE)"
    )
    add_vfio_arguments(parser)
    parser.add_argument(
        "--mps-image-pull-secret",
        default=env("MPS_IMAGE_PULL_SECRET") or None,
        help="pull secret of that image in the namespace (env MPS_IMAGE_PULL_SECRET)",
    )


def _under(host_root: str | None, path: str) -> Path:
    return Path(host_root) / path.lstrip("/") if host_root else Path(path)


def plugin_paths(args: argparse.Namespace) -> PluginPaths:
    return PluginPaths(
        registry_dir=str(_under(args.host_root, args.registry_dir)),
        plugin_dir=str(_under(args.host_root, args.plugin_dir)),
        driver=DRIVER,
        pod_uid=args.pod_uid,
    )


def discovery(args: argparse.Namespace) -> CdiDiscovery:
    mount = args.driver_root_mount
    if args.host_root and not Path(mount).exists():
        mount = args.host_root  # a simulated host has its driver installed at its own root
    return CdiDiscovery(MountedDriverRoot(mount), args.host_root or "/", args.host_driver_root)


def mig_control(args: argparse.Namespace, nvml: NVML) -> MigControl:
    return node_hardware.of(args).mig(args, nvml)


def sharing_host(args: argparse.Namespace, api: KubeAPI, nvml: NVML) -> SharingHost:
    """Card settings and MPS daemons: NVML, nvidia-smi and daemon Pods on a real node; on a simulated
    one the same Pods, run by a simulated kubelet, and settings kept under the host root."""
    daemons = KubeMpsDaemons(
        api, args.namespace, args.node_name, args.mps_image, args.host_driver_root, args.mps_image_pull_secret
    )
    settings, runner = node_hardware.of(args).sharing(args, api, nvml, daemons)
    # The plugin directory as the host sees it: daemon Pods and CDI mounts name host paths.
    return SharingHost(settings, runner, args.plugin_dir, args.node_name)


def build_prepare(
    args: argparse.Namespace,
    api: KubeAPI,
    nvml: NVML,
    clock: Clock,
    offers: OfferFollower | None,
    metrics: HandlerMetrics | None = None,
) -> tuple[PrepareService, PluginPaths, Callable[[list[str]], None]]:
    """The DRA service, its socket paths, and the base CDI spec writer the publisher calls;
    with ``metrics``, the service, its checkpoint and its MIG control report to them."""
    paths = plugin_paths(args)
    plugin_dir = Path(paths.plugin_dir)
    found = discovery(args)
    hook = stage_cdi_hook(args.cdi_hook_path, Path(args.image_cdi_hook), plugin_dir, args.plugin_dir)
    writer = CdiWriter(_under(args.host_root, args.cdi_root))
    store: CheckpointStore = FileCheckpointStore(plugin_dir / "checkpoint.json", host_root=args.host_root)
    mig = mig_control(args, nvml)
    if metrics is not None:
        metrics.watch_checkpoint_file(plugin_dir / "checkpoint.json")
        store, mig = MeteredCheckpointStore(store, metrics), MeteredMig(mig, metrics)
    service = PrepareService(
        api,
        args.node_name,
        store,
        lambda: NodeLock(plugin_dir / "pu.lock"),
        mig,
        FileClaimCDI(found, writer, hook),
        clock,
        offers=offers,
        sharing=sharing_host(args, api, nvml),
        # Written where this process reaches the plugin directory, mounted from where the host has it.
        metadata=None if args.no_device_metadata else FileDeviceMetadata(plugin_dir, args.plugin_dir),
        observer=None if metrics is None else PrepareObserver(metrics),
        vfio=vfio_side(args, api, nvml, clock, plugin_dir),
    )

    def write_base_spec(cards: list[str]) -> None:
        nodes: list[CardNode] = []
        for address in cards:
            try:
                nodes.append(found.card_node(address))
            except DiscoveryError:
                continue  # a card the driver does not drive (yet): not offered as Physical either
        spec = base_spec(found.driver_files(hook), nodes)
        if spec is None:
            writer.delete_base()
        else:
            writer.write_base(spec)

    return service, paths, write_base_spec
