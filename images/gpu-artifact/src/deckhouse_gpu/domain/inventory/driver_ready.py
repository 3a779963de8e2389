# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DriverReady condition, decided from the driver validator pods on the card's node (DESIGN.md S4.2.2).

The driver validator runs as a DaemonSet (``gpu-handler validate-driver``); its pod is Ready only
while the node's driver root holds a complete driver whose libraries match the loaded kernel
module and that drives a GPU, so a Ready validator pod is the evidence that the driver works for
every card of that node. gpu-controller is the only writer of this
condition (DESIGN.md D8); everything here is pure: pods and cards in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.inventory.conditions import find, set_condition
from deckhouse_gpu.domain.inventory.physicalgpu import (
    DRIVER_READY,
    LABEL_NODE,
    LABEL_VENDOR,
    ConditionStatus,
)

REASON_READY = "ValidatorReady"
REASON_NOT_READY = "ValidatorNotReady"
REASON_MISSING = "ValidatorMissing"
NVIDIA_VENDOR_LABEL = "nvidia"
NVIDIA_VENDOR_ID = "10de"
_MAX_TERMINATION_MESSAGE = 200

Object = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    status: ConditionStatus
    reason: str
    message: str


def card_node(card: Object) -> str | None:
    """The node a PhysicalGPU sits on: ``status.nodeInfo.nodeName``, else the node label.

    The label is the fallback for the moment between the agent's create and its status write.
    """
    node = ((card.get("status") or {}).get("nodeInfo") or {}).get("nodeName")
    if node:
        return str(node)
    label = ((card.get("metadata") or {}).get("labels") or {}).get(LABEL_NODE)
    return str(label) if label else None


def validated_by_nvidia_validator(card: Object) -> bool:
    """Only NVIDIA cards: the NVIDIA validator says nothing about another vendor's driver."""
    label = ((card.get("metadata") or {}).get("labels") or {}).get(LABEL_VENDOR)
    if label:
        return bool(label == NVIDIA_VENDOR_LABEL)
    vendor_id = (((card.get("status") or {}).get("pciInfo") or {}).get("vendor") or {}).get("id")
    return vendor_id in (None, NVIDIA_VENDOR_ID)  # unknown yet: treat as NVIDIA, the only GPU we inventory


def pod_node(pod: Object) -> str | None:
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def pod_name(pod: Object) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def is_terminating(pod: Object) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_ready(pod: Object) -> bool:
    """The kubelet's Ready condition is True and the pod is not on its way out."""
    ready = find((pod.get("status") or {}).get("conditions"), "Ready")
    return ready is not None and ready.get("status") == "True" and not is_terminating(pod)


def why_not_ready(pod: Object) -> str:
    """A short, stable explanation (no restart counts or back-off times, which change every retry)."""
    status = pod.get("status") or {}
    parts = [f"phase {status.get('phase') or 'Unknown'}"]
    if is_terminating(pod):
        parts.append("terminating")
    containers = [("init container", c) for c in status.get("initContainerStatuses") or ()]
    containers += [("container", c) for c in status.get("containerStatuses") or ()]
    for what, container in containers:
        if container.get("ready"):
            continue
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            parts.append(f"{what} {container.get('name')} waiting: {waiting['reason']}")
        elif terminated and terminated.get("exitCode", 0) != 0:
            parts.append(f"{what} {container.get('name')} exited with code {terminated.get('exitCode')}")
        else:
            continue
        last = terminated or (container.get("lastState") or {}).get("terminated") or {}
        if last.get("message"):
            parts.append(f"last termination: {str(last['message']).strip()[:_MAX_TERMINATION_MESSAGE]}")
        break  # the first failing container is the cause; the later ones only wait for it
    else:
        ready = find(status.get("conditions"), "Ready") or {}
        if ready.get("message") or ready.get("reason"):
            parts.append(str(ready.get("message") or ready.get("reason")))
    return "; ".join(parts)


def verdict(node: str, pods: Iterable[Object]) -> Verdict:
    """DriverReady for the cards on ``node`` from the validator pods scheduled there."""
    here = _ordered(p for p in pods if pod_node(p) == node)
    ready = [p for p in here if is_ready(p)]
    if ready:
        return Verdict(
            ConditionStatus.TRUE,
            REASON_READY,
            f"validator pod {pod_name(ready[0])} is ready: the driver on node {node} is validated",
        )
    if here:
        first = here[0]
        others = f" (and {len(here) - 1} other validator pod(s) not ready)" if len(here) > 1 else ""
        return Verdict(
            ConditionStatus.FALSE,
            REASON_NOT_READY,
            f"validator pod {pod_name(first)} on node {node} is not ready: {why_not_ready(first)}{others}; "
            f"see kubectl -n {_namespace(first)} logs {_name(first)} --all-containers",
        )
    # No evidence either way: the driver may be fine, the validator simply does not run here.
    return Verdict(
        ConditionStatus.UNKNOWN,
        REASON_MISSING,
        f"no driver validator pod runs on node {node}; it runs on managed nodes with an NVIDIA "
        "PhysicalGPU: check that the node is not opted out, and the validator DaemonSet's pods",
    )


def updated_conditions(card: Object, decided: Verdict, now: str) -> list[Object] | None:
    """The card's conditions with DriverReady set, or None when nothing would change."""
    status = card.get("status") or {}
    current: Sequence[Object] | None = status.get("conditions")
    generation = (card.get("metadata") or {}).get("generation")
    updated = set_condition(
        current,
        DRIVER_READY,
        decided.status,
        decided.reason,
        decided.message,
        now,
        observed_generation=generation if isinstance(generation, int) else None,
    )
    if find(updated, DRIVER_READY) == find(current, DRIVER_READY):
        return None
    return updated


def status_of(card: Object) -> str | None:
    condition = find((card.get("status") or {}).get("conditions"), DRIVER_READY)
    return str(condition.get("status")) if condition else None


def _ordered(pods: Iterable[Object]) -> list[Object]:
    """Pods still running first (a terminating one is being replaced), then newest first, then by name."""
    by_name = sorted(pods, key=pod_name)
    newest = sorted(
        by_name, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True
    )
    return sorted(newest, key=is_terminating)  # stable: keeps the order within each group


def _namespace(pod: Object) -> str:
    return str((pod.get("metadata") or {}).get("namespace") or "default")


def _name(pod: Object) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")
