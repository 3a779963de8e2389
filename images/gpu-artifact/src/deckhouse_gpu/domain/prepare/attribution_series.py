# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The label sets of gpu-handler's prepared-device info metric: one per device of every completely
prepared claim of the checkpoint and per Pod that reserves the claim, with the labels
dcgm-exporter puts on the same hardware, so the two join in PromQL (docs/MONITORING.md).

Derived from the checkpoint each time, never accumulated: a series exists exactly while its claim
is prepared on the node, and a restarted handler shows the same series again. The number of series
is bounded by the node's devices times MAX_PODS (domain/prepare/attribution.py). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from deckhouse_gpu.domain.prepare.attribution import DeviceAttribution
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.metrics import VFIO, device_type
from deckhouse_gpu.domain.prepare.plan import DevicePlan

# The label names are dcgm-exporter's where the meaning is the same (UUID, pci_bus_id, GPU_I_ID,
# GPU_I_PROFILE); namespace and pod are the workload's, as kube-state-metrics names them.
LABELS = (
    "namespace",
    "pod",
    "claim",
    "device_class",
    "offer_type",
    "device",
    "UUID",
    "pci_bus_id",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "mig_uuid",
    "share_percent",
)


@dataclass(frozen=True)
class DeviceSeries:
    namespace: str
    pod: str  # "" when the claim was reserved for no Pod at prepare (or by an older handler)
    claim: str
    device_class: str
    offer_type: str  # Physical, MIG, Shared, VFIO
    device: str  # the ResourceSlice device name
    uuid: str
    pci_bus_id: str
    gpu_instance_id: str  # "" for a whole card
    mig_profile: str
    mig_uuid: str
    share_percent: str  # "" for a device held whole

    def values(self) -> tuple[str, ...]:
        return (
            self.namespace, self.pod, self.claim, self.device_class, self.offer_type, self.device,
            self.uuid, self.pci_bus_id, self.gpu_instance_id, self.mig_profile, self.mig_uuid,
            self.share_percent,
        )  # fmt: skip


def dcgm_bus_id(address: str) -> str:
    """``0000:17:00.0`` -> ``00000000:17:00.0``: the PCI address as NVML and DCGM print it (an
    8-digit domain, upper-case hex)."""
    domain, _, rest = address.partition(":")
    try:
        return f"{int(domain, 16):08X}:{rest.upper()}"
    except ValueError:
        return address.upper()


def _device_series(entry: ClaimEntry, plan: DevicePlan, pod: str) -> DeviceSeries:
    known = entry.attribution.of(plan) if entry.attribution is not None else None
    about = known or DeviceAttribution(plan.device, plan.share_id)
    record = next(
        (r for r in entry.mig if r.card == plan.card and r.placement_start == plan.placement_start),
        None,
    )
    is_mig = plan.kind == "MIG"
    return DeviceSeries(
        namespace=entry.namespace,
        pod=pod,
        claim=entry.name,
        device_class=about.device_class,
        offer_type=VFIO if plan.vfio else device_type(plan),
        device=plan.device,
        uuid=about.card_uuid or (plan.uuid or ""),
        pci_bus_id=dcgm_bus_id(plan.card),
        gpu_instance_id=str(record.gpu_instance_id) if is_mig and record is not None else "",
        mig_profile=about.mig_profile if is_mig else "",
        mig_uuid=record.uuid if is_mig and record is not None else "",
        share_percent=about.share_percent,
    )


def prepared_device_series(checkpoint: Checkpoint) -> list[DeviceSeries]:
    """Every completely prepared device and Pod, sorted; half-prepared claims are left out."""
    found: set[DeviceSeries] = set()
    for entry in checkpoint.entries_in("PrepareCompleted"):
        pods = (entry.attribution.pods if entry.attribution is not None else ()) or ("",)
        for plan in entry.devices:
            found.update(_device_series(entry, plan, pod) for pod in pods)
    return sorted(found, key=DeviceSeries.values)
