# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Who a prepared claim's devices serve, as gpu-handler saw it at prepare: the Pods the claim is
reserved for, the DeviceClass of each request, the share of a shared card, and the card's UUID and
MIG profile name DCGM labels its figures with.

Recorded in the checkpoint entry (domain/prepare/checkpoint.py), so that gpu-handler's
prepared-device info metric (domain/prepare/attribution_series.py) is derived from the checkpoint
alone, after a restart too. The kubelet asks to prepare a claim once, for the first Pod that uses
it: Pods that reserve an already prepared claim later are not seen here. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.prepare.checkpoint_fields import (
    CorruptCheckpoint,
    Fields,
    as_object,
    flat_json,
    flat_values,
    strings,
)
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

# status.reservedFor holds at most 256 entries; the metric keeps a bounded number of series per
# device, so Pods past this many (sorted by name) are left out of it.
MAX_PODS = 16


@dataclass(frozen=True)
class DeviceAttribution:
    device: str
    share_id: str | None = None
    device_class: str = ""
    share_percent: str = ""  # "25": the share of the card the scheduler gave; "" for a device held whole
    card_uuid: str = ""  # the physical card's UUID (a MIG instance's parent card too)
    mig_profile: str = ""  # "1g.10gb" for a MIG instance, as DCGM's GPU_I_PROFILE names it


@dataclass(frozen=True)
class ClaimAttribution:
    pods: tuple[str, ...] = ()  # names, in the claim's namespace
    devices: tuple[DeviceAttribution, ...] = ()

    def of(self, plan: DevicePlan) -> DeviceAttribution | None:
        return next(
            (d for d in self.devices if d.device == plan.device and d.share_id == plan.share_id), None
        )


def reserving_pods(claim: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the Pods in ``status.reservedFor`` (other consumers are not Pods), at most MAX_PODS."""
    names = {
        str(entry.get("name", ""))
        for entry in (claim.get("status") or {}).get("reservedFor") or ()
        if isinstance(entry, Mapping) and entry.get("resource") == "pods" and not entry.get("apiGroup")
    }
    return tuple(sorted(name for name in names if name))[:MAX_PODS]


def _classes(claim: Mapping[str, Any]) -> dict[str, str]:
    """Request name (``req`` or ``req/sub``, as the allocation's results name it) -> DeviceClass."""
    found = {}
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        if not isinstance(request, Mapping):
            continue
        name = str(request.get("name", ""))
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            found[name] = str(exactly.get("deviceClassName") or "")
        for sub in request.get("firstAvailable") or ():
            if isinstance(sub, Mapping):
                found[f"{name}/{sub.get('name')}"] = str(sub.get("deviceClassName") or "")
    return found


def _share(result: Mapping[str, Any]) -> str:
    if not result.get("shareID"):
        return ""
    text = (result.get("consumedCapacity") or {}).get("sharePercent")
    if text is None:
        return "100"  # the offer's default request: the whole card
    try:
        return f"{float(Quantity.parse(str(text)).value):g}"
    except QuantityError:
        return ""


def _card_facts(cards: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, dict[int, str]]]:
    """PCI address -> (card UUID, MIG profile ID -> profile name)."""
    found = {}
    for card in cards:
        status = card.get("status") or {}
        address = (status.get("pciInfo") or {}).get("address")
        if not address:
            continue
        uuid = ((status.get("currentState") or {}).get("nvidia") or {}).get("gpuUUID") or ""
        mig = ((status.get("capabilities") or {}).get("nvidia") or {}).get("mig") or {}
        profiles = {
            int(p["profileID"]): str(p.get("name", ""))
            for p in mig.get("profiles") or ()
            if isinstance(p, Mapping) and isinstance(p.get("profileID"), int)
        }
        found[str(address)] = (str(uuid), profiles)
    return found


def claim_attribution(
    claim: Mapping[str, Any], plans: Sequence[DevicePlan], cards: Iterable[Mapping[str, Any]]
) -> ClaimAttribution:
    """What the claim object and the node's PhysicalGPUs say about each planned device."""
    classes = _classes(claim)
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
        "results"
    ) or ()
    facts = _card_facts(cards)
    devices = []
    for plan in plans:
        result = next(
            (
                r
                for r in results
                if isinstance(r, Mapping)
                and r.get("device") == plan.device
                and r.get("pool") == plan.pool
                and (r.get("shareID") or None) == plan.share_id
            ),
            {},
        )
        uuid, profiles = facts.get(plan.card, ("", {}))
        profile = profiles.get(plan.profile_id, "") if plan.profile_id is not None else ""
        devices.append(
            DeviceAttribution(
                plan.device, plan.share_id, classes.get(plan.request, ""), _share(result), uuid, profile
            )
        )
    return ClaimAttribution(reserving_pods(claim), tuple(devices))


_DEVICE_FIELDS: Fields = {
    "device": ("device", str, True),
    "share_id": ("shareID", str, False),
    "device_class": ("deviceClass", str, False),
    "share_percent": ("sharePercent", str, False),
    "card_uuid": ("cardUUID", str, False),
    "mig_profile": ("migProfile", str, False),
}


def attribution_json(attribution: ClaimAttribution) -> dict[str, Any]:
    return {
        "pods": list(attribution.pods),
        "devices": [flat_json(device, _DEVICE_FIELDS) for device in attribution.devices],
    }


def attribution_from_json(raw: Any, path: str) -> ClaimAttribution:
    obj = as_object(raw, path)
    devices = obj.get("devices") or []
    if not isinstance(devices, list):
        raise CorruptCheckpoint(f"{path}.devices: expected a list")
    found = []
    for i, item in enumerate(devices):
        values = flat_values(item, f"{path}.devices[{i}]", _DEVICE_FIELDS)
        texts = {key: value or "" for key, value in values.items() if key not in ("device", "share_id")}
        found.append(DeviceAttribution(values["device"], values["share_id"], **texts))
    return ClaimAttribution(strings(obj.get("pods") or [], f"{path}.pods"), tuple(found))
