# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""PhysicalGPU objects as the agent, the controller and the handler leave them, for offer tests."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.inventory.nvidia_status import nvidia_view
from deckhouse_gpu.domain.naming import model_slug, physical_gpu_name
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML

T0 = "2026-11-21T00:00:00Z"


def ready_card(
    node: str,
    address: str,
    model: str,
    *,
    healthy: bool = True,
    uid: str = "",
    numa_node: int | None = None,
) -> dict[str, Any]:
    """A fully described card: inventory, DriverReady, capabilities and HardwareHealthy; with
    ``numa_node``, the NUMA node the agent read from sysfs (none by default, as sysfs's -1)."""
    pci = GPU_MODELS[model]
    pci_info: dict[str, Any] = {"address": address, "pcieRoot": f"pci0000:{address[5:7]}"}
    if numa_node is not None:
        pci_info["numaNode"] = numa_node
    nvml = SimulatedNVML({address: model}, node_name=node)
    view = nvidia_view(nvml.snapshot(address), nvml.driver())
    conditions = [
        {
            "type": "DriverReady",
            "status": "True",
            "reason": "ValidatorReady",
            "message": "",
            "lastTransitionTime": T0,
        },
        {
            "type": "HardwareHealthy",
            "status": "True" if healthy else "Unknown",
            "reason": "NVMLHealthy" if healthy else "NVMLQueryFailed",
            "message": "",
            "lastTransitionTime": T0,
        },
    ]
    return {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "PhysicalGPU",
        "metadata": {
            "name": physical_gpu_name(node, address),
            "uid": uid or f"uid-{node}-{address}",
            "labels": {
                "gpu.deckhouse.io/node": node,
                "gpu.deckhouse.io/vendor": "nvidia",
                "gpu.deckhouse.io/device": model_slug(pci.device_name, pci.vendor_id, pci.device_id),
            },
        },
        "status": {
            "nodeInfo": {"nodeName": node},
            "pciInfo": pci_info,
            "currentState": {"driverType": "Nvidia", "driverName": "nvidia", "nvidia": view.current_state},
            "capabilities": view.capabilities,
            "conditions": conditions,
        },
    }


def node_cards(node: str, model: str, count: int) -> list[dict[str, Any]]:
    return [ready_card(node, f"0000:{0x10 + i * 0x08:02x}:00.0", model) for i in range(count)]
