# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""From an allocated ResourceClaim to what must be prepared on this node (DESIGN.md S9.2.2, plan step).

Only the results of this driver in this node's pool count: a claim may also hold devices of
other drivers. A device is identified from its offer name (derived from the PCI address, the
MIG profile and the placement, DESIGN.md D5) and checked against the card's capabilities,
so a stale or foreign name is refused with a clear error instead of half-preparing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.opaque_types import DeviceType
from deckhouse_gpu.domain.config.sharing_strategy import SharingPlan
from deckhouse_gpu.domain.naming import mig_name, physical_name
from deckhouse_gpu.domain.offers.model import DRIVER

type DeviceKind = DeviceType
KINDS: tuple[DeviceKind, ...] = tuple(features.DEVICE_TYPES)  # the registry's (DESIGN.md D20)


@dataclass(frozen=True)
class DevicePlan:
    """One allocated device of a claim, as the scheduler chose it."""

    request: str
    pool: str
    device: str  # the ResourceSlice device name
    card: str  # PCI address of the physical GPU
    kind: DeviceKind
    share_id: str | None = None
    profile_id: int | None = None  # MIG only: GPU instance profile and placement to create
    placement_start: int | None = None
    placement_size: int | None = None
    uuid: str | None = None  # Physical: the card's UUID (an MPS daemon's CUDA_VISIBLE_DEVICES)
    # Filled by prepare from the device's config (domain/prepare/sharing.py): what its strategy (of
    # the registry, domain/config/features.py) applies, limits resolved. The checkpoint keeps it,
    # so what a card must be set to is known from the checkpoint alone; None: no sharing config.
    sharing: SharingPlan | None = None
    # Filled by prepare (services/prepare/prepare_vfio_steps.py): the card goes to a virtual machine
    # through vfio-pci (DESIGN.md D7); None for a card used through the nvidia driver.
    vfio: bool | None = None


class PlanError(ValueError):
    """The claim cannot be prepared here; the message says why and what to check."""


def _mig_offers(card: Mapping[str, Any]) -> dict[str, tuple[int, int, int]]:
    """Offer name -> (profile id, placement start, placement size) for every MIG offer of a card."""
    status = card.get("status") or {}
    address = (status.get("pciInfo") or {}).get("address", "")
    mig = (((status.get("capabilities") or {}).get("nvidia") or {}).get("mig")) or {}
    offers = {}
    for profile in mig.get("profiles") or []:
        for placement in profile.get("placements") or []:
            name = mig_name(address, profile["name"], int(placement["start"]))
            offers[name] = (int(profile["profileID"]), int(placement["start"]), int(placement["size"]))
    return offers


def device_plan(result: Mapping[str, Any], cards: Iterable[Mapping[str, Any]]) -> DevicePlan:
    device = str(result.get("device", ""))
    for card in cards:
        address = ((card.get("status") or {}).get("pciInfo") or {}).get("address")
        if not address:
            continue
        request, pool = str(result.get("request", "")), str(result.get("pool", ""))
        share = result.get("shareID") or None
        if device == physical_name(address):
            uuid = (((card.get("status") or {}).get("currentState") or {}).get("nvidia") or {}).get("gpuUUID")
            return DevicePlan(request, pool, device, address, "Physical", share_id=share, uuid=uuid or None)
        mig = _mig_offers(card).get(device)
        if mig is not None:
            profile_id, start, size = mig
            return DevicePlan(request, pool, device, address, "MIG", share, profile_id, start, size)
    raise PlanError(
        f"device {device!r} is not an offer of any GPU on this node: the card may have been removed "
        "or its capabilities changed since the claim was allocated; delete the claim to reallocate it"
    )


def plan_claim(
    claim: Mapping[str, Any], pool: str, cards: Sequence[Mapping[str, Any]]
) -> tuple[DevicePlan, ...]:
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        raise PlanError(
            "the claim is not allocated (yet): the kubelet retries once the scheduler has allocated it"
        )
    results = (allocation.get("devices") or {}).get("results") or []
    ours = [r for r in results if r.get("driver") == DRIVER and r.get("pool") == pool]
    if not ours:
        raise PlanError(f"the claim has no devices of {DRIVER} in pool {pool}")
    plans = tuple(device_plan(result, cards) for result in ours)
    seen = [(p.device, p.share_id) for p in plans]
    if len(seen) != len(set(seen)):
        raise PlanError("the allocation names the same device twice without distinct shares")
    return plans
