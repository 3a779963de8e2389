# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO passthrough at prepare (DESIGN.md D7, docs/VFIO.md): which devices go to a virtual
machine, what must hold before a card is touched, and which functions of its IOMMU group move.

A Physical device is prepared for VFIO when the config that applies to it is a ``VFIOConfig`` or a
Pod that reserves the claim (``status.reservedFor``) has the annotation
``gpu.deckhouse.io/vfio: "true"``. Passthrough hands the whole IOMMU group to the VM, because the
IOMMU isolates groups, not functions; so every function of the group must be the card's own (its
audio or USB-C controller: the same bus and slot) or a bridge, which stays with its driver. A group
that holds anything else (a NIC behind a switch without ACS) would take that device from the host
and is refused, naming it. Pure: the functions are read by the caller (ports/vfio.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.prepare.plan import DevicePlan

ANNOTATION = "gpu.deckhouse.io/vfio"
VFIO_DRIVER = "vfio-pci"
NVIDIA_DRIVER = "nvidia"
BRIDGE_CLASS = "06"  # PCI base class 0x06: host, PCI-to-PCI and other bridges


@dataclass(frozen=True)
class PciFunction:
    """One PCI function as sysfs shows it now."""

    address: str
    class_code: str  # six hex digits
    vendor_id: str
    device_id: str
    driver: str | None  # None: bound to no driver
    numa_node: int | None = None
    pcie_root: str | None = None


@dataclass(frozen=True)
class CardGroup:
    """A card's IOMMU group as the checks found it: every member, in address order."""

    card: str
    group: int
    functions: tuple[PciFunction, ...]

    @property
    def gpu(self) -> PciFunction | None:
        return next((f for f in self.functions if f.address == self.card), None)

    @property
    def prebound(self) -> bool:
        """The card was on vfio-pci before this claim (an administrator bound it): NVML cannot see
        it, so nothing is asked of NVML and nothing is given back to nvidia afterwards."""
        gpu = self.gpu
        return gpu is not None and gpu.driver == VFIO_DRIVER


@dataclass(frozen=True)
class VfioRecord:
    """A function this claim moved to vfio-pci, saved before the move: what a rollback or unprepare
    gives back (``driver``: the one it had; None: it had none)."""

    card: str
    function: str
    driver: str | None
    iommu_group: int


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str


def same_slot(address: str, card: str) -> bool:
    """Functions of one device share domain, bus and slot (``0000:3b:00``); only the function differs."""
    return address.rpartition(".")[0] == card.rpartition(".")[0]


def is_bridge(function: PciFunction) -> bool:
    return function.class_code.startswith(BRIDGE_CLASS)


def to_bind(group: CardGroup) -> tuple[PciFunction, ...]:
    """The functions that go to vfio-pci: the card's own, bridges left out."""
    return tuple(f for f in group.functions if same_slot(f.address, group.card) and not is_bridge(f))


def foreign(group: CardGroup) -> tuple[PciFunction, ...]:
    """Members of the group that are neither the card's functions nor bridges."""
    return tuple(f for f in group.functions if not same_slot(f.address, group.card) and not is_bridge(f))


def reserving_pods(claim: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, uid) of the Pods in the claim's ``status.reservedFor``."""
    found = []
    for entry in (claim.get("status") or {}).get("reservedFor") or []:
        if isinstance(entry, Mapping) and entry.get("resource") == "pods" and not entry.get("apiGroup"):
            found.append((str(entry.get("name", "")), str(entry.get("uid", ""))))
    return found


def asks_for_vfio(pod: Mapping[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION) == "true"


def pod_ref(pod: Mapping[str, Any]) -> PodRef:
    meta = pod.get("metadata") or {}
    return PodRef(str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", "")))


def annotation_refusal(plan: DevicePlan, pod: PodRef) -> str | None:
    """Why the annotation cannot be honoured for this device; None when it can."""
    asked = f'Pod {pod.namespace}/{pod.name} asks for VFIO ({ANNOTATION}: "true")'
    if plan.kind != "Physical":
        return (
            f"{asked}, but device {plan.device} is a MIG instance: passthrough gives whole cards only; "
            "select whole cards (deviceType Physical) for the virtual machine's claim"
        )
    if plan.share_id:
        return (
            f"{asked}, but device {plan.device} is a share of a card: passthrough needs a whole card "
            "of its own; use a DeviceClass that selects cards without allowMultipleAllocations"
        )
    return None


def sharing_refusal(plan: DevicePlan) -> str | None:
    if plan.vfio and plan.sharing is not None:
        return (
            f"device {plan.device} is asked for VFIO and for {plan.sharing.strategy} sharing at once: a card "
            "passed to a virtual machine is not shared; remove the sharing config or the VFIO request"
        )
    return None


def node_refusal(card: str, status: Mapping[str, Any]) -> str | None:
    """Fail-closed: only a node the agent found to be bare metal passes a card through."""
    node = status.get("nodeInfo") or {}
    if node.get("bareMetal") is True:
        return None
    name = node.get("nodeName") or "this node"
    why = "says it is a virtual machine" if node.get("bareMetal") is False else "is not known"
    return (
        f"card {card}: VFIO passthrough needs a bare-metal node, and {name}'s nodeInfo.bareMetal "
        f"{why} (DMI names a hypervisor or cannot be read); use a VFIO claim on a bare-metal node"
    )


def group_refusals(group: CardGroup, vfs: int, pids: Sequence[int]) -> list[str]:
    """What stops passing the card's group through; empty when nothing does."""
    card = group.card
    found = []
    if vfs > 0:
        found.append(
            f"card {card} has {vfs} SR-IOV virtual functions enabled: disable them first "
            f"(echo 0 > /sys/bus/pci/devices/{card}/sriov_numvfs)"
        )
    if pids:
        listed = ", ".join(str(pid) for pid in sorted(pids))
        found.append(
            f"processes run on card {card} (PIDs {listed}): stop them; the kubelet retries the prepare"
        )
    for other in foreign(group):
        found.append(
            f"IOMMU group {group.group} of card {card} also holds {other.address} (class "
            f"{other.class_code[:4]}, driver {other.driver or 'none'}), which is not a function of the "
            "card: passing the group through would take it from the host; put the card in a slot "
            "with a group of its own (a switch port with ACS) or choose another card"
        )
    return found


def no_group_refusal(card: str) -> str:
    return (
        f"card {card} has no IOMMU group: the IOMMU is off; enable VT-d or AMD-Vi in the firmware and "
        "intel_iommu=on iommu=pt (Intel) or amd_iommu=on (AMD) on the kernel command line, then reboot"
    )


def no_driver_refusal(card: str) -> str:
    return (
        f"card {card}: the vfio-pci driver is not loaded on the node: load it (modprobe vfio-pci, and "
        "add it to /etc/modules-load.d so that it loads at boot)"
    )


def prebound_refusal(plan: DevicePlan) -> str:
    return (
        f"card {plan.card} is bound to vfio-pci, not nvidia: it serves VFIO claims only; ask for "
        f'device {plan.device} with a VFIOConfig (or the Pod annotation {ANNOTATION}: "true"), or '
        "bind the card back to nvidia"
    )


def changed_refusal(group: CardGroup, now: Iterable[str]) -> str | None:
    """The group as checked must be the group bound: a member that came or went in between (a
    hot-plug, a rescan) was never checked."""
    before = sorted(f.address for f in group.functions)
    after = sorted(now)
    if before == after:
        return None
    return (
        f"IOMMU group {group.group} of card {group.card} changed between the check and the bind "
        f"(checked {', '.join(before)}; now {', '.join(after) or 'empty'}): nothing was left on "
        "vfio-pci; the kubelet retries the prepare"
    )
