# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Events a PhysicalGPU gets when its health or its driver changes: short, and saying what
the change means for workloads and what to do about it.

Only a change makes an Event: the callers compare the stored object with what they write, so a
restarted component, a heartbeat or a message that merely changes its wording makes none.
"""

from __future__ import annotations

from dataclasses import dataclass

from deckhouse_gpu.domain.inventory.health import hardware_health as health
from deckhouse_gpu.domain.inventory.health.device_health import TAINT_KEY
from deckhouse_gpu.domain.inventory.pci import driver_type
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus, DriverType

NORMAL, WARNING = "Normal", "Warning"
DRIVER_CHANGED = "PhysicalGPUDriverChanged"
XID_EVENT = "XidError"  # an Xid that changes nothing (domain/inventory/health/xid.py, UNCLASSIFIED)

# What an operator does about each HardwareHealthy reason (docs/README.md, "The HardwareHealthy
# condition", says the same at length).
_HEALTH_HINTS = {
    health.REASON_NVML_UNAVAILABLE: (
        "NVML does not work on node {node}: read gpu-handler's log there and run nvidia-smi; "
        "after a driver upgrade without a reboot, reboot the node"
    ),
    health.REASON_QUERY_FAILED: (
        "the card may be lost: look for Xid errors in node {node}'s kernel log (dmesg), then reset "
        "the card (nvidia-smi -r -i {address}) or reboot the node"
    ),
    health.REASON_XID: "the Xid's details are in node {node}'s kernel log (dmesg | grep -i xid)",
    health.REASON_DRIVER_NOT_READY: "fix the driver first: the card's DriverReady condition says why",
    health.REASON_NOT_NVIDIA: "expected for a card given to virtual machines; otherwise bind it to nvidia",
    health.REASON_NO_ADDRESS: "if this lasts, check gpu-node-agent on node {node}",
}
# Expected states rather than faults: no warning.
_QUIET_REASONS = (health.REASON_NOT_NVIDIA, health.REASON_NO_ADDRESS)


@dataclass(frozen=True)
class CardEvent:
    type: str  # Normal or Warning
    reason: str
    message: str


def health_event(before: str | None, verdict: health.Verdict, node: str, address: str) -> CardEvent | None:
    """The Event of a HardwareHealthy change from ``before`` (None: never set) to ``verdict``."""
    after = verdict.status.value
    if before == after:
        return None
    reason = f"HardwareHealthy{after}"
    head = f"HardwareHealthy {before or 'unset'} -> {after} ({verdict.reason}): {verdict.message}"
    if verdict.status is ConditionStatus.TRUE:
        offered = "offered again" if before is not None else "offered"
        return CardEvent(NORMAL, reason, f"{head}; its devices are {offered}")
    hint = _HEALTH_HINTS.get(verdict.reason, "read gpu-handler's log on node {node}")
    kind = NORMAL if verdict.reason in _QUIET_REASONS else WARNING
    # The devices of a card NVML fails on stay published with a taint (domain/offers/device_taints.py).
    unhealthy = verdict.reason == health.REASON_QUERY_FAILED or verdict.status is ConditionStatus.FALSE
    fate = (
        f"its devices are tainted {TAINT_KEY} (withdrawn if the API server drops device taints)"
        if unhealthy
        else "its devices are not offered"
    )
    message = f"{head}; {fate}; " + hint.format(node=node, address=address)
    return CardEvent(kind, reason, message)


def driver_event(before: str | None, after: str | None, node: str, address: str) -> CardEvent | None:
    """The Event of the card being bound to another kernel driver (names as in sysfs; None: unbound)."""
    if before == after:
        return None
    head = f"GPU {address} is now bound to {after or 'no driver'} (was {before or 'no driver'})"
    kind = driver_type(after)
    if kind is DriverType.NVIDIA:
        what = "its devices are offered to Pods once DriverReady and HardwareHealthy are True"
        return CardEvent(NORMAL, DRIVER_CHANGED, f"{head}: {what}")
    if kind is DriverType.VFIO:
        what = "it is for passthrough to virtual machines; Pods cannot use it and NVML does not read it"
        return CardEvent(NORMAL, DRIVER_CHANGED, f"{head}: {what}")
    if kind is None:
        what = (
            f"nothing can use it; bind it to nvidia (or vfio-pci for virtual machines), "
            f"see lspci -k -s {address} on node {node}"
        )
        return CardEvent(WARNING, DRIVER_CHANGED, f"{head}: {what}")
    what = f"the module offers only cards bound to nvidia or vfio-pci; unbind {after} and bind nvidia"
    return CardEvent(WARNING, DRIVER_CHANGED, f"{head}: {what}")
