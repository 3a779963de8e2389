# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO on a simulated node (docs/VFIO.md): the IOMMU groups and vfio-pci of its host tree, the
passthrough gpu-handler is given, and what an operator would look at after a VM's claim.

The simulated kernel (simulator/host/sim_vfio.py) sends its uevents to the node's gpu-node-agent, so
the PhysicalGPU follows the card to vfio-pci and back on its own, as on a node.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.vfio_files import FileVfioLedger, FileVfioPayloads
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI
from deckhouse_gpu.services.prepare.vfio_release import VfioSide
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from deckhouse_gpu.simulator.host.sim_vfio import SimGpuProcesses, SimulatedVfio
from deckhouse_gpu.simulator.scenario import SimNode, numa_node_of

AUDIO = next(model for model in OTHER_DEVICES if model.key == "gpu-audio")
FIRST_GROUP = 30
PLUGIN_DIR = f"/var/lib/kubelet/plugins/{DRIVER}"  # as the host names it: CDI mounts point there


def build_iommu(spec: SimNode, builder: HostBuilder) -> None:
    """IOMMU on: each card (and its audio function) in a group of its own; vfio-pci loaded."""
    builder.load_driver("vfio-pci").load_driver("snd_hda_intel")
    for index, gpu in enumerate(sorted(spec.gpus, key=lambda g: g.address)):
        group = FIRST_GROUP + index
        numa = numa_node_of(spec.machine, gpu.address, gpu.numa_node)
        builder.add_gpu(gpu.model, gpu.address, gpu.driver, iommu_group=group, numa_node=numa)
        if gpu.audio:
            builder.add_function(gpu.address[:-1] + "1", AUDIO, "snd_hda_intel", group)


def vfio_side(
    api: KubeAPI,
    node: str,
    root: Path,
    nvml: SimulatedNVML,
    clock: Clock,
    on_event: Callable[[str, str], None],
) -> VfioSide:
    """What gpu-handler is given for passthrough on the simulated node; ``on_event``: the uevents."""
    plugin_dir = root / PLUGIN_DIR.lstrip("/")
    return VfioSide(
        SimulatedVfio(root, nvml, on_event),
        SimGpuProcesses(nvml),
        FileVfioPayloads(plugin_dir, PLUGIN_DIR),
        FileVfioLedger(plugin_dir, root / "proc/sys/kernel/random/boot_id"),
        api,
        node,
        events=EventRecorder(api, "gpu-handler", node, clock),
        return_timeout=5.0,
        poll_interval=0.02,
    )


def describe_cards(api: KubeAPI, node: str, root: Path, cards: list[str]) -> list[str]:
    """Where each of the claim's cards is now: its functions' drivers in sysfs and what its
    PhysicalGPU says (``kubectl get pgpu -o wide``'s Driver column)."""
    host = SimulatedVfio(root)
    objects = api.list(PHYSICAL_GPUS, label_selector=node_selector(node)).items
    lines = []
    for card in cards:
        group = host.iommu_group(card)
        addresses = host.group_addresses(group) if group is not None else (card,)
        drivers = ", ".join(f"{a} {host.function(a).driver or 'no driver'}" for a in addresses)
        found = [o for o in objects if ((o.get("status") or {}).get("pciInfo") or {}).get("address") == card]
        state = ((found[0].get("status") or {}).get("currentState") or {}) if found else {}
        lines.append(
            f"  {card}: IOMMU group {group}: {drivers}; PhysicalGPU driverType {state.get('driverType')}"
        )
    return lines


def describe_payload(root: Path, uid: str) -> list[str]:
    """The QEMU hook payload the VM's container reads, summed up."""
    path = root / PLUGIN_DIR.lstrip("/") / "vfio-payload" / f"{uid}.json"
    if not path.exists():
        return []
    document: dict[str, Any] = json.loads(path.read_text())
    pod = document.get("pod") or {}
    lines = [f"  QEMU hook payload {document['kind']} for Pod {pod.get('namespace')}/{pod.get('name')}:"]
    for device in document["devices"]:
        functions = ", ".join(f"{f['pciAddress']} (was {f['originalDriver']})" for f in device["functions"])
        lines.append(
            f"    {device['name']}: {device['productName']}, {device['memoryMiB']} MiB, IOMMU group "
            f"{device['iommuGroup']}: {functions}"
        )
    return lines
