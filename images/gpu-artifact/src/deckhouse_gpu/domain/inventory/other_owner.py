# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Another owner of a node's NVIDIA GPUs: a device plugin, the GPU operator, Deckhouse's
node-manager, or processes nobody here prepared (DESIGN.md D16).

A node is held while any of these says so, first the one the scheduler itself reads:

1. its ``status.allocatable`` has an NVIDIA GPU resource above 0 (``nvidia.com/gpu``,
   ``nvidia.com/gpu.shared``, ``nvidia.com/mig-<profile>[.shared]``): the kubelet has a device
   plugin registered for it, and the scheduler sends such Pods to that plugin, not to DRA;
2. the labels node-manager puts on the nodes of a NodeGroup with ``spec.gpu``
   (``node.deckhouse.io/gpu``, and ``node.deckhouse.io/device-gpu.config``, where its device
   plugin reads the sharing mode from);
3. the GPU operator's label that places its device plugin
   (``nvidia.com/gpu.deploy.device-plugin`` is ``true``, or ``paused-for-mig-change`` while its MIG
   manager repartitions the cards).

The labels hold a node even while its plugin restarts (the kubelet then reports 0 allocatable for
a while), so offers do not flap during a rollout of the plugin's DaemonSet. One card is held on its
own when NVML lists processes on it and no claim of this node is prepared on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

OTHER_OWNER = "OtherOwner"  # the PhysicalGPU condition gpu-handler writes (True: held by another)

LABEL_NODE_MANAGER = "node.deckhouse.io/device-gpu.config"
LABEL_NODE_MANAGER_GPU = "node.deckhouse.io/gpu"
LABEL_GPU_OPERATOR = "nvidia.com/gpu.deploy.device-plugin"
# "paused-for-mig-change": the operator's MIG manager stopped the plugin to repartition the cards,
# which it brings back afterwards; the cards are the operator's all along.
GPU_OPERATOR_ON = frozenset({"true", "paused-for-mig-change"})

REASON_DEVICE_PLUGIN = "DevicePlugin"
REASON_NODE_MANAGER = "NodeManagerGPU"
REASON_GPU_OPERATOR = "GPUOperator"
REASON_PROCESSES = "ForeignProcesses"
REASON_NONE = "NoOtherOwner"
OWNER_REASONS = (REASON_DEVICE_PLUGIN, REASON_NODE_MANAGER, REASON_GPU_OPERATOR, REASON_PROCESSES)


@dataclass(frozen=True)
class Owner:
    """Why this module must keep its hands off a card: the condition's reason and message."""

    reason: str
    message: str
    resources: tuple[str, ...] = ()  # the device plugin's resources, when they decided


def is_gpu_resource(name: str) -> bool:
    """An extended resource of NVIDIA's GPU device plugin. Other ``nvidia.com/`` resources (the
    network operator's RDMA and SR-IOV pools) say nothing about GPUs and hold nothing."""
    if not name.startswith("nvidia.com/"):
        return False
    rest = name.removeprefix("nvidia.com/")
    return rest in ("gpu", "gpu.shared") or rest.startswith("mig-")


def _count(value: Any) -> int:
    try:
        quantity = Quantity.parse(str(value))
    except QuantityError:
        return 0
    return quantity.as_integer() if quantity.is_integer() else 1


def plugin_resources(node: Mapping[str, Any] | None) -> dict[str, int]:
    """The NVIDIA GPU resources the node's kubelet can hand out now (allocatable above 0): the
    same test the scheduler makes before it leaves an extended resource to DRA."""
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    found = {str(name): _count(value) for name, value in allocatable.items() if is_gpu_resource(str(name))}
    return {name: count for name, count in sorted(found.items()) if count > 0}


def served_elsewhere(node: Mapping[str, Any] | None, resource: str) -> int:
    """How many of ``resource`` the node's device plugins have allocatable (0: none)."""
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    return _count(allocatable[resource]) if resource in allocatable else 0


def node_owner(node: Mapping[str, Any] | None) -> Owner | None:
    """The other owner of every NVIDIA GPU of the node, or None when the module may offer them."""
    resources = plugin_resources(node)
    if resources:
        listed = ", ".join(f"{name}: {count}" for name, count in resources.items())
        return Owner(
            REASON_DEVICE_PLUGIN,
            f"a device plugin serves this node's GPUs (allocatable {listed}): the scheduler gives "
            "them to Pods through it, so the module offers none; remove the plugin from this node "
            "to hand its GPUs to DRA (docs/MIGRATION.md)",
            tuple(resources),
        )
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    managed = [key for key in (LABEL_NODE_MANAGER, LABEL_NODE_MANAGER_GPU) if key in labels]
    if managed:
        shown = ", ".join(f"{key}={labels[key]}" if labels[key] else key for key in managed)
        return Owner(
            REASON_NODE_MANAGER,
            f"Deckhouse node-manager runs the NVIDIA device plugin here (label {shown}, NodeGroup "
            "spec.gpu): remove spec.gpu from the node's NodeGroup to hand its GPUs to DRA "
            "(docs/MIGRATION.md)",
        )
    operator = str(labels.get(LABEL_GPU_OPERATOR, ""))
    if operator in GPU_OPERATOR_ON:
        return Owner(
            REASON_GPU_OPERATOR,
            f"the NVIDIA GPU operator runs its device plugin here (label {LABEL_GPU_OPERATOR}="
            f"{operator}): label the node {LABEL_GPU_OPERATOR}=false to hand its GPUs to DRA "
            "(docs/MIGRATION.md)",
        )
    return None


def card_owner(node: Owner | None, pids: tuple[int, ...] | None, prepared: bool) -> Owner | None:
    """The other owner of one card: the node's, else processes on a card no claim of this node is
    prepared on (``pids`` None: NVML could not tell, which holds nothing)."""
    if node is not None:
        return node
    if pids and not prepared:
        shown = ", ".join(map(str, pids[:8])) + (" ..." if len(pids) > 8 else "")
        return Owner(
            REASON_PROCESSES,
            f"processes run on this card (PIDs {shown}) and no claim of this node is prepared on it: "
            "something outside DRA uses it; it is offered again once they end",
        )
    return None


def condition(owner: Owner | None) -> tuple[ConditionStatus, str, str]:
    """The ``OtherOwner`` condition: True with the owner's reason, False when the card is the module's."""
    if owner is None:
        return ConditionStatus.FALSE, REASON_NONE, "no device plugin or other owner holds this card"
    return ConditionStatus.TRUE, owner.reason, owner.message
