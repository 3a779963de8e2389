# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A node ready for VFIO prepare calls (docs/VFIO.md): the prepare world of testkit/prepare_world.py
plus the host's PCI tree, in which each card sits in an IOMMU group of its own with its audio
function, vfio-pci is loaded, and the simulated kernel moves drivers (simulator/host/sim_vfio.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.vfio_files import FileVfioLedger, FileVfioPayloads
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, KubeAPI
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.prepare.vfio_release import VfioSide
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_vfio import SimGpuProcesses, SimulatedVfio
from testkit.prepare_world import NODE, PLUGIN_DIR, PrepareWorld, build_world

AUDIO = next(model for model in OTHER_DEVICES if model.key == "gpu-audio")
BOOT_ID_FILE = "proc/sys/kernel/random/boot_id"


@dataclass
class VfioWorld:
    world: PrepareWorld
    host: HostBuilder  # the PCI tree under the world's host root
    groups: dict[str, int]  # card -> its IOMMU group
    events: list[tuple[str, str]] = field(default_factory=list)  # uevents the simulated kernel sent

    @property
    def root(self) -> Path:
        return self.world.root / "host"

    def side(self, **overrides: Any) -> VfioSide:
        def record(action: str, address: str) -> None:
            self.events.append((action, address))

        values: dict[str, Any] = {
            "events": EventRecorder(self.world.api, "gpu-handler", NODE, SystemClock()),
            "return_timeout": 0.5,
            "poll_interval": 0.01,
            **overrides,
        }
        return VfioSide(
            SimulatedVfio(self.root, self.world.nvml, record),
            SimGpuProcesses(self.world.nvml),
            FileVfioPayloads(self.world.root / "plugin", PLUGIN_DIR),
            FileVfioLedger(self.world.root / "plugin", self.root / BOOT_ID_FILE),
            self.world.api,
            NODE,
            **values,
        )

    def service(self, **extra: Any) -> PrepareService:
        return self.world.service(**{"vfio": self.side(), **extra})

    def driver(self, address: str) -> str | None:
        link = self.host.device_dir(address) / "driver"
        return link.readlink().name if link.is_symlink() else None

    def audio(self, card: str) -> str:
        return card[:-1] + "1"


def build_vfio_world(
    root: Path, cards: dict[str, str], bare_metal: bool = True, with_audio: bool = True
) -> VfioWorld:
    """``cards``: PCI address -> model; IOMMU groups from 20 up, in address order."""
    world = build_world(root, cards)
    host = HostBuilder(root / "host")
    host.load_driver("vfio-pci").load_driver("snd_hda_intel")
    groups = {}
    for index, (address, model) in enumerate(sorted(cards.items())):
        groups[address] = 20 + index
        host.add_gpu(model, address, "nvidia", iommu_group=groups[address])
        if with_audio:
            host.add_function(address[:-1] + "1", AUDIO, "snd_hda_intel", groups[address])
        set_bare_metal(world, address, bare_metal)
    return VfioWorld(world, host, groups)


def set_bare_metal(world: PrepareWorld, address: str, bare_metal: bool | None) -> None:
    """The card's ``nodeInfo`` as gpu-node-agent writes it from DMI (None: not known)."""
    for card in world.api.list(PHYSICAL_GPUS).items:
        if card["status"]["pciInfo"]["address"] == address:
            info = {"nodeName": NODE, "bareMetal": bare_metal}
            world.api.patch(
                PHYSICAL_GPUS, card["metadata"]["name"], {"status": {"nodeInfo": info}}, subresource="status"
            )


def reserve_for_pod(
    world: PrepareWorld,
    claim: dict[str, Any],
    pod: str,
    annotations: dict[str, str] | None = None,
    change: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """A Pod (with ``annotations``) and the claim reserved for it, as the scheduler leaves them."""
    namespace = claim["metadata"]["namespace"]
    meta: dict[str, Any] = {"name": pod, "namespace": namespace, "annotations": dict(annotations or {})}
    created = world.api.create(PODS, {"metadata": meta, "spec": {"nodeName": NODE}})
    if change is not None:
        change(created)
    reserved = [{"resource": "pods", "name": pod, "uid": created["metadata"]["uid"]}]
    return world.api.patch(
        RESOURCE_CLAIMS,
        claim["metadata"]["name"],
        {"status": {"reservedFor": reserved}},
        subresource="status",
        namespace=namespace,
    )


VFIO_CONFIG = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "VFIOConfig"}  # the legacy spelling
# The canonical spelling, exactly as Deckhouse's virtualization module writes it for a VM's GPU.
VFIO_DEVICE_CONFIG = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"}


def allocate_vfio(
    api: KubeAPI,
    name: str,
    *devices: str,
    namespace: str = "ns",
    node: str = NODE,
    parameters: Mapping[str, Any] = VFIO_CONFIG,
) -> dict[str, Any]:
    """A ResourceClaim whose config is a VFIOConfig (or ``parameters``), allocated as the scheduler
    writes it."""
    config = {"requests": ["gpu"], "opaque": {"driver": "gpu.deckhouse.io", "parameters": dict(parameters)}}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu-vfio", "count": len(devices)}}
    spec = {"devices": {"requests": [request], "config": [config]}}
    api.create(RESOURCE_CLAIMS, {"metadata": {"name": name, "namespace": namespace}, "spec": spec})
    results = [
        {"request": "gpu", "driver": "gpu.deckhouse.io", "pool": f"gpus/{node}", "device": device}
        for device in devices
    ]
    allocated = {"results": results, "config": [{"source": "FromClaim", **config}]}
    return api.patch(
        RESOURCE_CLAIMS,
        name,
        {"status": {"allocation": {"devices": allocated}}},
        subresource="status",
        namespace=namespace,
    )
