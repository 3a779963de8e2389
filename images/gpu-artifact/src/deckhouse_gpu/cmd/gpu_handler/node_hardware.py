# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler drives on its node, chosen once at start: the real cards (NVML, sysfs,
nvidia-smi) here, or a simulated host's, which only the simulator brings (deckhouse_gpu.simulator
.node_hardware). A binary that runs on a node therefore never imports a test double
(.importlinter, "no test double in production code")."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.ports.nvml import NVML, XidEvents
from deckhouse_gpu.ports.sharing import CardSettings, MpsDaemons
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioHost
from deckhouse_gpu.services.publishing.prestart import probe

if TYPE_CHECKING:
    from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML

log = logging.getLogger("gpu-handler")


class NodeHardware(Protocol):
    """Each method builds one port of gpu-handler over this kind of node's cards."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command-line flags this kind of node needs, beside the common ones."""

    def card_addresses(self, args: argparse.Namespace, api: KubeAPI) -> list[str]:
        """The PCI addresses NVML should show, where it cannot find them itself (else [])."""

    def nvml(self, args: argparse.Namespace, addresses: list[str]) -> NVML: ...

    def xid_events(self, nvml: NVML) -> XidEvents: ...

    def mig(self, args: argparse.Namespace, nvml: NVML) -> MigControl: ...

    def sharing(
        self, args: argparse.Namespace, api: KubeAPI, nvml: NVML, daemons: MpsDaemons
    ) -> tuple[CardSettings, MpsDaemons]:
        """The cards' sharing settings and who runs the MPS daemon Pods (the kubelet, on a node)."""

    def vfio(self, args: argparse.Namespace, nvml: NVML, root: Path) -> tuple[VfioHost, GpuProcesses] | None:
        """The kernel side of passthrough, or None where there is no host to bind cards on."""


class RealHardware:
    """A GPU node: pynvml over the driver root's libnvidia-ml.so.1, sysfs, nvidia-smi. Every
    adapter is imported when first built: the prestart and validator commands run without pynvml."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--nvml-library", help="load this libnvidia-ml.so.1 instead of searching the driver root"
        )

    def card_addresses(self, args: argparse.Namespace, api: KubeAPI) -> list[str]:
        return []  # NVML enumerates the node's cards itself

    def nvml(self, args: argparse.Namespace, addresses: list[str]) -> NVML:
        from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML  # noqa: PLC0415 - only real nodes load pynvml

        library = getattr(args, "nvml_library", None)
        if library is None:
            found = probe(MountedDriverRoot(args.driver_root_mount), "/")
            library = str(found.nvml_library) if found.nvml_library else None
            if library is None:
                log.warning(
                    "libnvidia-ml.so.1 not found under the driver root; using the default search path",
                    extra={"driverRootMount": args.driver_root_mount},
                )
        return RealNVML(library)

    def xid_events(self, nvml: NVML) -> XidEvents:
        from deckhouse_gpu.adapters.nvml.nvml_events import RealXidEvents  # noqa: PLC0415

        return RealXidEvents(_real(nvml))

    def mig(self, args: argparse.Namespace, nvml: NVML) -> MigControl:
        from deckhouse_gpu.adapters.nvml.nvml_mig import RealMig  # noqa: PLC0415

        return RealMig(_real(nvml))

    def sharing(
        self, args: argparse.Namespace, api: KubeAPI, nvml: NVML, daemons: MpsDaemons
    ) -> tuple[CardSettings, MpsDaemons]:
        from deckhouse_gpu.adapters.nvml.card_settings_nvidia import NvidiaCardSettings  # noqa: PLC0415

        return NvidiaCardSettings(_real(nvml), MountedDriverRoot(args.driver_root_mount)), daemons

    def vfio(self, args: argparse.Namespace, nvml: NVML, root: Path) -> tuple[VfioHost, GpuProcesses] | None:
        from deckhouse_gpu.adapters.host.sysfs_vfio import SysfsVfio  # noqa: PLC0415
        from deckhouse_gpu.adapters.nvml.nvml_vfio import RealGpuProcesses  # noqa: PLC0415

        return SysfsVfio(root), RealGpuProcesses(_real(nvml), root)


def _real(nvml: NVML) -> RealNVML:
    from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML  # noqa: PLC0415

    if not isinstance(nvml, RealNVML):  # the metered wrapper is applied after these ports are built
        raise TypeError(f"real hardware needs RealNVML, got {type(nvml).__name__}")
    return nvml


REAL = RealHardware()


def of(args: argparse.Namespace) -> NodeHardware:
    """The hardware ``parse_args`` put on the command line's namespace."""
    return cast(NodeHardware, getattr(args, "hardware", REAL))
