# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's VFIO wiring (DESIGN.md D7): sysfs and NVML on a node, the simulated kernel and
NVML under ``--host-root``; the payloads and the ledger in the plugin directory.

With ``--nvml-sim`` and no ``--host-root`` there is no host to bind cards on (the simulated NVML
follows the API's cards), so passthrough is off: a claim asking for it fails with a clear error.
``--no-vfio`` (env VFIO=false) switches it off on a node too.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from deckhouse_gpu.adapters.vfio_files import FileVfioLedger, FileVfioPayloads
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioHost
from deckhouse_gpu.services.events import EventRecorder
from deckhouse_gpu.services.vfio_release import VfioSide

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
    if getattr(args, "no_vfio", False) or (args.nvml_sim and not args.host_root):
        return None
    root = Path(args.host_root or "/")
    host: VfioHost
    gpus: GpuProcesses
    if args.nvml_sim:
        from deckhouse_gpu.adapters.sim.sim_nvml import SimulatedNVML  # noqa: PLC0415
        from deckhouse_gpu.adapters.sim.sim_vfio import SimGpuProcesses, SimulatedVfio  # noqa: PLC0415

        assert isinstance(nvml, SimulatedNVML)
        host, gpus = SimulatedVfio(root, nvml), SimGpuProcesses(nvml)
    else:
        from deckhouse_gpu.adapters.nvml_real import RealNVML  # noqa: PLC0415
        from deckhouse_gpu.adapters.nvml_vfio import RealGpuProcesses  # noqa: PLC0415
        from deckhouse_gpu.adapters.sysfs_vfio import SysfsVfio  # noqa: PLC0415

        assert isinstance(nvml, RealNVML)
        host, gpus = SysfsVfio(root), RealGpuProcesses(nvml, root)
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
