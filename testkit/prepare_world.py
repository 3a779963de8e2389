# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A node ready for prepare calls: API objects, simulated NVML/MIG, a host tree, CDI and checkpoint files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.cdi_discovery import CdiDiscovery
from deckhouse_gpu.adapters.cdi_writer import CdiWriter
from deckhouse_gpu.adapters.checkpoint_file import FileCheckpointStore
from deckhouse_gpu.adapters.claim_cdi_files import FileClaimCDI
from deckhouse_gpu.adapters.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.adapters.node_lock import NodeLock
from deckhouse_gpu.adapters.sim import driver_tree
from deckhouse_gpu.adapters.sim.sim_host_mig import HostTreeMig
from deckhouse_gpu.adapters.sim.sim_mig import SimulatedMig
from deckhouse_gpu.adapters.sim.sim_nvml import SimulatedNVML
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare import PrepareService
from testkit.gpu_objects import ready_card

NODE = "w1"
BOOT_ID = "8f0c1d2e-0000-4000-8000-000000000001"
HOOK = "/usr/local/bin/nvidia-cdi-hook"


@dataclass
class PrepareWorld:
    root: Path
    api: MemoryKube
    nvml: SimulatedNVML
    mig: HostTreeMig
    cdi_root: Path
    checkpoint_path: Path

    def service(self, lock_timeout: float = 5.0, **extra: Any) -> PrepareService:
        host = self.root / "host"
        discovery = CdiDiscovery(MountedDriverRoot(self.root / "driver-root"), host, "/")
        cdi = FileClaimCDI(discovery, CdiWriter(self.cdi_root), HOOK)
        store = FileCheckpointStore(self.checkpoint_path, host_root=host)
        lock_path = self.lock_path
        return PrepareService(
            self.api,
            NODE,
            store,
            lambda: NodeLock(lock_path, timeout=lock_timeout),
            self.mig,
            cdi,
            SystemClock(),
            **extra,
        )

    @property
    def lock_path(self) -> Path:
        return self.root / "plugin" / "pu.lock"

    def reboot(self, boot_id: str) -> None:
        driver_tree.write(self.root / "host/proc/sys/kernel/random/boot_id", boot_id + "\n")


def build_world(root: Path, cards: dict[str, str]) -> PrepareWorld:
    """``cards``: PCI address -> simulated model."""
    host = root / "host"
    driver_tree.build_driver_root(root / "driver-root")
    minors = {address: index for index, address in enumerate(sorted(cards))}
    driver_tree.build_host(host, minors)
    driver_tree.write(host / "proc/sys/kernel/random/boot_id", BOOT_ID + "\n")
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": NODE}})
    for address, model in cards.items():
        card = ready_card(NODE, address, model)
        status = card.pop("status")
        api.create(PHYSICAL_GPUS, card)
        api.patch(PHYSICAL_GPUS, card["metadata"]["name"], {"status": status}, subresource="status")
    nvml = SimulatedNVML(cards, node_name=NODE)
    mig = HostTreeMig(SimulatedMig(nvml), host)
    return PrepareWorld(root, api, nvml, mig, root / "cdi", root / "plugin" / "checkpoint.json")


def allocate(
    api: MemoryKube, name: str, *devices: str, namespace: str = "ns", shares: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A ResourceClaim allocated as the scheduler writes it, one result per device."""
    api.create(RESOURCE_CLAIMS, {"metadata": {"name": name, "namespace": namespace}, "spec": {"devices": {}}})
    results = []
    for index, device in enumerate(devices):
        result = {"request": "gpu", "driver": "gpu.deckhouse.io", "pool": f"gpus/{NODE}", "device": device}
        if index < len(shares):
            result["shareID"] = shares[index]
        results.append(result)
    status = {"allocation": {"devices": {"results": results}}}
    return api.patch(RESOURCE_CLAIMS, name, {"status": status}, subresource="status", namespace=namespace)
