# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A node ready for prepare calls: API objects, simulated NVML/MIG, a host tree, CDI and checkpoint files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.cdi_discovery import CdiDiscovery
from deckhouse_gpu.adapters.files.cdi_writer import CdiWriter
from deckhouse_gpu.adapters.files.checkpoint_file import FileCheckpointStore
from deckhouse_gpu.adapters.files.claim_cdi_files import FileClaimCDI
from deckhouse_gpu.adapters.files.node_lock import NodeLock
from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host import driver_tree
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from deckhouse_gpu.simulator.host.sim_host_mig import HostTreeMig
from deckhouse_gpu.simulator.host.sim_mig import SimulatedMig
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.gpu_objects import ready_card

NODE = "w1"
BOOT_ID = "8f0c1d2e-0000-4000-8000-000000000001"
HOOK = "/usr/local/bin/nvidia-cdi-hook"
DRIVER = "gpu.deckhouse.io"
MPS_NAMESPACE = "d8-gpu"
MPS_IMAGE = "registry.example/gpu-handler@sha256:" + "0" * 64  # nothing pulls it: the kubelet is simulated
PLUGIN_DIR = "/var/lib/kubelet/plugins/gpu.deckhouse.io"  # as the host sees it; MPS directories go under it
MPS_READY_TIMEOUT = 5.0  # the simulated kubelet runs a daemon at once; only a broken test waits
MPS_POLL_INTERVAL = 0.01


@dataclass
class PrepareWorld:
    root: Path
    api: MemoryKube
    nvml: SimulatedNVML
    mig: HostTreeMig
    cdi_root: Path
    checkpoint_path: Path
    settings: SimCardSettings  # the cards' compute mode and time-slice (in memory)
    daemons: SimulatedKubeletMps  # MPS daemon Pods on ``api``, run at once by a simulated kubelet

    @property
    def sharing(self) -> SharingHost:
        """What gpu-handler is given for sharing; every service of the world shares its state."""
        return SharingHost(
            self.settings,
            self.daemons,
            PLUGIN_DIR,
            NODE,
            ready_timeout=MPS_READY_TIMEOUT,
            poll_interval=MPS_POLL_INTERVAL,
        )

    def service(self, lock_timeout: float = 5.0, **extra: Any) -> PrepareService:
        """A PrepareService of the node; ``extra`` overrides its keywords (``sharing=None``: a
        handler without sharing support)."""
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
            **{"sharing": self.sharing, **extra},
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
    daemons = SimulatedKubeletMps(
        KubeMpsDaemons(api, MPS_NAMESPACE, NODE, MPS_IMAGE, "/"), api, host_root=host
    )
    return PrepareWorld(
        root,
        api,
        nvml,
        mig,
        root / "cdi",
        root / "plugin" / "checkpoint.json",
        SimCardSettings(cards),
        daemons,
    )


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


def allocate_share(
    api: MemoryKube,
    name: str,
    device: str,
    percent: str,
    parameters: dict[str, Any] | None,
    namespace: str = "ns",
) -> dict[str, Any]:
    """A ResourceClaim for ``percent`` of a shared card, allocated as the scheduler writes it: a
    shareID and the consumed share in the result, the claim's opaque config (``parameters``, a
    GPUConfig; None: none) copied into the allocation."""
    exactly = {"deviceClassName": "gpu-shared", "capacity": {"requests": {"sharePercent": percent}}}
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    config = (
        None
        if parameters is None
        else {"requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": parameters}}
    )
    if config is not None:
        devices["config"] = [config]
    created = api.create(
        RESOURCE_CLAIMS, {"metadata": {"name": name, "namespace": namespace}, "spec": {"devices": devices}}
    )
    result = {
        "request": "gpu",
        "driver": DRIVER,
        "pool": f"gpus/{NODE}",
        "device": device,
        # The scheduler's shareID is a fresh UUID per share: the claim's own UID is one.
        "shareID": created["metadata"]["uid"],
        "consumedCapacity": {"sharePercent": percent},
    }
    allocated: dict[str, Any] = {"results": [result]}
    if config is not None:
        allocated["config"] = [{"source": "FromClaim", **config}]
    status = {"allocation": {"devices": allocated}}
    return api.patch(RESOURCE_CLAIMS, name, {"status": status}, subresource="status", namespace=namespace)
