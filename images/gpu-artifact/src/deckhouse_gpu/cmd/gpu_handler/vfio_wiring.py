# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's VFIO wiring (DESIGN.md D7): sysfs and NVML on a node, the simulated kernel and
NVML under ``--host-root``; the payloads and the ledger in the plugin directory.

The node's hardware (``node_hardware``) may have no host to bind cards on (the simulator's NVML
without a host root follows the API's cards): passthrough is off then, and a claim asking for it
fails with a clear error.
``--no-vfio`` (env VFIO=false) switches it off on a node too.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from deckhouse_gpu.adapters.files.vfio_files import FileVfioLedger, FileVfioPayloads
from deckhouse_gpu.cmd.gpu_handler import node_hardware
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.services.prepare.vfio_release import VfioSide
from deckhouse_gpu.services.runtime.events import EventRecorder

BOOT_ID = "proc/sys/kernel/random/boot_id"


def add_vfio_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-vfio",
        action="store_true",
        default=os.environ.get("VFIO", "true").lower() == "false",
        help="never pass cards to virtual machines (env VFIO=false)",
    )


def vfio_side(
    args: argparse.Namespace, api: KubeAPI, nvml: NVML, clock: Clock, plugin_dir: Path
) -> VfioSide | None:
    if getattr(args, "no_vfio", False):
        return None
    root = Path(args.host_root or "/")
    kernel = node_hardware.of(args).vfio(args, nvml, root)
    if kernel is None:
        return None
    host, gpus = kernel
    return VfioSide(
        host,
        gpus,
        # Written where this process reaches the plugin directory, mounted from where the host has it.
        FileVfioPayloads(plugin_dir, args.plugin_dir),
        FileVfioLedger(plugin_dir, root / BOOT_ID),
        api,
        args.node_name,
        events=EventRecorder(api, "gpu-handler", args.node_name, clock),
    )
