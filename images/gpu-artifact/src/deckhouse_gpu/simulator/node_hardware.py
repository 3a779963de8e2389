# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A simulated GPU node for gpu-handler: NVML of chosen models (``--nvml-sim a30,t4``), MIG, sharing
settings, MPS daemons run by a simulated kubelet and a simulated kernel for VFIO, all kept under the
host root (``--host-root``) so they outlive a killed handler as a real card's state does.

Only the simulator's entry points (``gpu-handler-sim``, ``gpu-simulator``) hand this to gpu-handler;
the production binary knows the real hardware only (cmd/gpu_handler/node_hardware.py)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.cmd.gpu_handler.wiring import WiringError
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.inventory.physicalgpu import DriverType
from deckhouse_gpu.ports.host import HostUnreadable
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, KubeError
from deckhouse_gpu.ports.mig import MigControl, MigError
from deckhouse_gpu.ports.nvml import NVML, XidEvents
from deckhouse_gpu.ports.sharing import CardSettings, MpsDaemons
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioHost
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from deckhouse_gpu.simulator.host.sim_host_mig import HostTreeMig
from deckhouse_gpu.simulator.host.sim_mig import SimulatedMig
from deckhouse_gpu.simulator.host.sim_mig_state import PersistentSimMig
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps
from deckhouse_gpu.simulator.host.sim_nvml import SimNVMLConfigError, SimulatedNVML, from_model_list
from deckhouse_gpu.simulator.host.sim_vfio import PARKED, SimGpuProcesses, SimulatedVfio

log = logging.getLogger("gpu-handler")


class SimulatedHardware:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--nvml-sim",
            metavar="MODELS",
            required=True,
            help="simulated NVML: comma-separated models (a30,t4,...); with --host-root the cards come "
            "from its sysfs",
        )

    def card_addresses(self, args: argparse.Namespace, api: KubeAPI) -> list[str]:
        """The host root's GPUs of the nvidia driver: those bound to it and those it lost to
        vfio-pci (a virtual machine's claim; the driver's entry parked for their return), so the
        models stay matched to the same cards; or else this node's PhysicalGPUs on nvidia."""
        if args.host_root:
            parked = Path(args.host_root) / PARKED
            drivers = _host_drivers(args.host_root)
            return sorted(a for a, driver in drivers.items() if driver == "nvidia" or (parked / a).exists())
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

    def nvml(self, args: argparse.Namespace, addresses: list[str]) -> NVML:
        try:
            nvml = from_model_list(
                args.nvml_sim, addresses, node_name=getattr(args, "node_name", None) or "sim-node"
            )
        except SimNVMLConfigError as error:
            raise WiringError(
                f"--nvml-sim: {error} (cards are matched to PCI addresses in sorted order)"
            ) from error
        if args.host_root:
            # A card a VM holds (on vfio-pci) when gpu-handler starts is out of NVML's sight, as on
            # a node; SimulatedVfio gives it back to NVML when it returns to nvidia.
            drivers = _host_drivers(args.host_root)
            for address in addresses:
                if drivers.get(address) != "nvidia":
                    nvml.remove_card(address)
        return nvml

    def xid_events(self, nvml: NVML) -> XidEvents:
        return _simulated(nvml)

    def mig(self, args: argparse.Namespace, nvml: NVML) -> MigControl:
        simulated = _simulated(nvml)
        if not args.host_root:
            return HostTreeMig(SimulatedMig(simulated), Path("/"))
        # A simulated host keeps its MIG state on disk, as a GPU keeps it across a plugin crash;
        # loading it now also shows the capabilities pass (the same SimulatedNVML) the mode it left.
        persistent = PersistentSimMig.under(simulated, Path(args.host_root))
        try:
            persistent.load()
        except MigError as error:  # every MIG call reports it too, to the kubelet's Pods
            log.error("simulated MIG state not restored", extra={"error": str(error)})
        return HostTreeMig(persistent, Path(args.host_root))

    def sharing(
        self, args: argparse.Namespace, api: KubeAPI, nvml: NVML, daemons: MpsDaemons
    ) -> tuple[CardSettings, MpsDaemons]:
        host_root = Path(args.host_root) if args.host_root else None
        # On a host root, also the cards a VM holds now: their settings are needed once they are back.
        cards = self.card_addresses(args, api) if host_root is not None else nvml.device_addresses()
        settings = SimCardSettings(cards) if host_root is None else SimCardSettings.under(host_root, cards)
        if not isinstance(daemons, KubeMpsDaemons):
            raise TypeError(f"the simulated kubelet runs KubeMpsDaemons' Pods, got {type(daemons).__name__}")
        return settings, SimulatedKubeletMps(daemons, api, host_root)

    def vfio(self, args: argparse.Namespace, nvml: NVML, root: Path) -> tuple[VfioHost, GpuProcesses] | None:
        if not args.host_root:
            return None  # the simulated NVML follows the API's cards: there is no host to bind them on
        simulated = _simulated(nvml)
        return SimulatedVfio(root, simulated), SimGpuProcesses(simulated)


def _host_drivers(host_root: str) -> dict[str, str | None]:
    """PCI address -> the driver bound now, for every GPU of the simulated host."""
    try:
        scan = SysfsHost(host_root).scan_pci()
    except HostUnreadable as error:
        raise WiringError(f"--host-root: {error}") from error
    return {d.address: d.driver for d in scan.gpus}


def _simulated(nvml: NVML) -> SimulatedNVML:
    if not isinstance(nvml, SimulatedNVML):
        raise TypeError(f"simulated hardware needs SimulatedNVML, got {type(nvml).__name__}")
    return nvml


SIMULATED = SimulatedHardware()
