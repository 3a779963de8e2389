# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A prepare world with sharing: simulated card settings, MPS daemon Pods on the in-memory API,
and claims allocated as shares with an opaque config, as the scheduler writes them."""

from __future__ import annotations

import json
from typing import Any

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import PODS, RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps
from testkit.prepare_world import NODE, PrepareWorld

A30, A30B = "0000:17:00.0", "0000:31:00.0"
WHOLE_A = "gpu-0000-17-00-0"
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
NAMESPACE = "d8-gpu"
API = "gpu.deckhouse.io/v1alpha1"
MPS = {"apiVersion": API, "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}


def time_slicing(interval: str = "Default") -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "GPUConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": interval}},
    }


class SharingNode:
    """The world's node with sharing on: ``settings`` are the cards' settings, ``daemons`` the Pods."""

    def __init__(self, world: PrepareWorld, kubelet: bool = True, ready_timeout: float = 2.0) -> None:
        self.world = world
        self.settings = SimCardSettings([A30, A30B])
        pods = KubeMpsDaemons(
            world.api, NAMESPACE, NODE, "registry.example/gpu-handler:1", "/run/nvidia/driver"
        )
        self.daemons: Any = SimulatedKubeletMps(pods, world.api) if kubelet else pods
        self.host = SharingHost(self.settings, self.daemons, PLUGIN, NODE, ready_timeout, poll_interval=0.01)

    def service(self, **extra: Any) -> PrepareService:
        return self.world.service(sharing=self.host, **extra)

    def pods(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.world.api.list(PODS, namespace=NAMESPACE).items)

    def cdi_env(self, uid: str) -> list[str]:
        spec = json.loads((self.world.cdi_root / claim_spec_file(uid)).read_text())
        (device,) = spec["devices"]
        return list(device["containerEdits"].get("env", []))

    def has_spec(self, uid: str) -> bool:
        return (self.world.cdi_root / claim_spec_file(uid)).exists()


def share_claim(
    api: MemoryKube,
    name: str,
    share_id: str,
    percent: str,
    parameters: dict[str, Any] | None,
    device: str = WHOLE_A,
    requests: list[str] | None = None,
) -> ClaimRef:
    """A claim with one request ``gpu`` asking for ``percent`` of a shared card, allocated."""
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu-shared", "capacity": {"requests": {"sharePercent": percent}}},
    }
    claim = {"metadata": {"name": name, "namespace": "ns"}, "spec": {"devices": {"requests": [request]}}}
    created = api.create(RESOURCE_CLAIMS, claim)
    result = {
        "request": "gpu",
        "driver": "gpu.deckhouse.io",
        "pool": f"gpus/{NODE}",
        "device": device,
        "shareID": share_id,
        "consumedCapacity": {"sharePercent": percent},
    }
    allocation: dict[str, Any] = {"devices": {"results": [result]}}
    if parameters is not None:
        entry: dict[str, Any] = {
            "source": "FromClaim",
            "opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters},
        }
        if requests is not None:
            entry["requests"] = requests
        allocation["devices"]["config"] = [entry]
    api.patch(
        RESOURCE_CLAIMS, name, {"status": {"allocation": allocation}}, subresource="status", namespace="ns"
    )
    return ClaimRef("ns", created["metadata"]["uid"], name)
