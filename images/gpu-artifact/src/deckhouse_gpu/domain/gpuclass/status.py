# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPUClass status: the Ready condition, with reasons an administrator can act on, and how
many published devices the class selects.

Ready is what deckhouse/virtualization waits for before it asks for a VM's card (ARCHITECTURE
D12). It is True once the DeviceClass of the same name is what the GPUClass says, even when no
card in the cluster matches it now (reason ``NoMatchingDevices``: cards may come later, and the
claims wait for them as they would for a hand-written class). It is False when there is no such
DeviceClass to use or it is not the class's: the spec is invalid, the name is taken by a
DeviceClass the module does not own (never overwritten), the extended resource name belongs to
another class, or the API server refused the DeviceClass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.domain.inventory.conditions import Condition, set_condition
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus

READY = "Ready"

# Ready=True
DEVICE_CLASS_READY = "DeviceClassReady"
NO_MATCHING_DEVICES = "NoMatchingDevices"
# Ready=False
INVALID_SPEC = "InvalidSpec"
DEVICE_CLASS_NAME_TAKEN = "DeviceClassNameTaken"
EXTENDED_RESOURCE_NAME_TAKEN = "ExtendedResourceNameTaken"
DEVICE_CLASS_REJECTED = "DeviceClassRejected"
# A device plugin serves the class's extended resource on a node where its devices are published.
DEVICE_PLUGIN_CONFLICT = "DevicePluginConflict"
SERVED_BY_DEVICE_PLUGIN = "ServedByDevicePlugin"
NOT_SERVED_BY_DEVICE_PLUGIN = "NotServedByDevicePlugin"


@dataclass(frozen=True)
class Verdict:
    ready: bool
    reason: str
    message: str


@dataclass(frozen=True)
class Matching:
    """Published devices (offers) the class selects now, and the nodes they are on."""

    devices: int = 0
    nodes: int = 0
    errors: int = 0  # devices whose evaluation failed: the scheduler would fail on them too
    node_names: tuple[str, ...] = field(default=(), compare=False)  # the nodes, sorted


def ready(name: str, matching: Matching) -> Verdict:
    if matching.devices == 0:
        return Verdict(
            True,
            NO_MATCHING_DEVICES,
            f"DeviceClass {name} is ready, but no device published in the cluster matches it now: "
            "its claims stay pending until such a card is published (kubectl get pgpu shows the "
            "cards, kubectl gpu capacity what each class gets)",
        )
    message = f"DeviceClass {name} selects {matching.devices} devices on {matching.nodes} nodes"
    if matching.errors:
        message += f"; its selector fails on {matching.errors} devices"
    return Verdict(True, DEVICE_CLASS_READY, message)


def invalid(problems: Iterable[str]) -> Verdict:
    return Verdict(False, INVALID_SPEC, "; ".join(problems) + ": no DeviceClass is written until it is fixed")


def name_taken(name: str) -> Verdict:
    return Verdict(
        False,
        DEVICE_CLASS_NAME_TAKEN,
        f"a DeviceClass {name} exists and is not this GPUClass's: it is left as it is; delete it "
        "or rename the GPUClass",
    )


def extended_resource_taken(resource: str, holder: str) -> Verdict:
    return Verdict(
        False,
        EXTENDED_RESOURCE_NAME_TAKEN,
        f"extendedResourceName {resource} belongs to DeviceClass {holder}: one extended resource "
        "names one class; choose another name or remove it from the other class",
    )


def rejected(name: str, error: str) -> Verdict:
    return Verdict(False, DEVICE_CLASS_REJECTED, f"the API server refused DeviceClass {name}: {error}")


@dataclass(frozen=True)
class PluginConflict:
    """The DevicePluginConflict condition of a class with an extended resource name."""

    conflict: bool
    reason: str
    message: str


def plugin_conflict(resource: str, nodes: Iterable[str]) -> PluginConflict:
    """The scheduler sends a Pod asking for ``resource`` to the device plugin on a node whose
    kubelet has it allocatable (KUBERNETES-FACTS.md F5): this class's devices there never serve such Pods."""
    names = sorted(nodes)
    if not names:
        return PluginConflict(
            False,
            NOT_SERVED_BY_DEVICE_PLUGIN,
            f"no node that publishes this class's devices serves {resource} through a device plugin",
        )
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return PluginConflict(
        True,
        SERVED_BY_DEVICE_PLUGIN,
        f"a device plugin serves {resource} on {len(names)} nodes that publish this class's devices "
        f"({shown}): Pods asking for {resource} there get the plugin's devices, never this class's; "
        "remove the plugin from those nodes or give the class another extendedResourceName "
        "(docs/MIGRATION.md)",
    )


def status_patch(
    current: dict[str, Any] | None,
    verdict: Verdict,
    generation: int | None,
    now: str,
    selects: str | None,
    matching: Matching | None,
    conflict: PluginConflict | None = None,
) -> dict[str, Any]:
    """The status fields to change; empty when the status already says all this. ``conflict``
    None: the class has no extended resource, and no DevicePluginConflict condition."""
    current = current or {}
    kept = [c for c in current.get("conditions") or [] if c.get("type") != DEVICE_PLUGIN_CONFLICT]
    if conflict is not None:
        kept = set_condition(
            current.get("conditions"),
            DEVICE_PLUGIN_CONFLICT,
            ConditionStatus.TRUE if conflict.conflict else ConditionStatus.FALSE,
            conflict.reason,
            conflict.message,
            now,
            generation,
        )
    conditions: list[Condition] = set_condition(
        kept,
        READY,
        ConditionStatus.TRUE if verdict.ready else ConditionStatus.FALSE,
        verdict.reason,
        verdict.message,
        now,
        generation,
    )
    wanted: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions,
        "selects": selects,
        "devices": matching.devices if matching is not None else None,
        "nodes": matching.nodes if matching is not None else None,
    }
    # set_condition keeps lastTransitionTime when the status stays: an unchanged verdict is equal.
    return {k: v for k, v in wanted.items() if current.get(k) != v}
