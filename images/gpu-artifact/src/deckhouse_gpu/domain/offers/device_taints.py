# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Health as device taints: an unhealthy card keeps its offers, each tainted (KUBERNETES-FACTS.md F1.7, F4.4).

A card whose devices the kubelet shows as Unhealthy (``device_health.card_health``: NVML fails on
this very card, or ``HardwareHealthy=False``) is offered as it would be healthy, every device with
the taint ``gpu.deckhouse.io/unhealthy=<reason>``. The scheduler keeps claims away unless they
tolerate it, and ``kubectl`` shows why. The effect is ``NoSchedule``; ``NoExecute`` (which also
evicts the Pods using the card, where the API server's eviction controller runs) only when the card
itself is gone: NVML no longer sees it, says it is lost (fallen off the bus), or that it needs a
reset. A fatal Xid error (``HardwareHealthy=False``, reason ``XidError``, domain/inventory/health/xid.py)
is ``NoExecute`` when the Xid loses the card or needs a reset at once, ``NoSchedule`` when the card
may finish what it runs first. A card whose health cannot be judged (NVML unavailable on the whole
node, the driver not ready) is not offered at all, as before. Where the API server drops taints
(DRADeviceTaints off) the publisher withdraws unhealthy cards instead
(services/publishing/slice_publisher.py).

``timeAdded`` is left to the API server, which sets it when missing on every write; a taint the
server stored keeps its time through republishes (``keep_time_added``), so an unchanged taint is
no write at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.health.device_health import TAINT_KEY, UNHEALTHY, card_health
from deckhouse_gpu.domain.inventory.health.hardware_health import REASON_XID
from deckhouse_gpu.domain.inventory.health.xid import XidClass, classify, xid_of_message
from deckhouse_gpu.domain.inventory.physicalgpu import HARDWARE_HEALTHY
from deckhouse_gpu.domain.naming import label_value
from deckhouse_gpu.domain.offers.card_offers import ActiveMode, card_offers, eligible
from deckhouse_gpu.domain.offers.model import CardOffers, DeviceTaint, OfferPolicy
from deckhouse_gpu.domain.offers.vfio_offers import offered

NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
# Taint values (label values): why the card is unhealthy.
GPU_LOST = "GPULost"
GPU_RESET_REQUIRED = "GPUResetRequired"
UNHEALTHY_VALUE = "Unhealthy"  # when the condition gives no reason
# What NVML says when the card itself is gone (adapters/nvml/nvml_errors.py writes "(NVML return code
# N)", services/publishing/capabilities.py the "does not see" of NVMLDeviceNotFound): GPU_IS_LOST is 15 (a
# card fallen off the bus, Xid 79), RESET_REQUIRED 16 (NVML's text: "GPU requires restart").
_LOST = ("gpu is lost", "nvml return code 15)", "does not see the card")
_RESET = ("gpu requires restart", "gpu requires reset", "nvml return code 16)")


def health_taint(card: Mapping[str, Any]) -> DeviceTaint | None:
    """The taint of an Unhealthy card's devices; None for a healthy card or one not judged."""
    health, _ = card_health(dict(card))
    if health != UNHEALTHY:
        return None
    found = conditions.find(((card.get("status") or {}).get("conditions")), HARDWARE_HEALTHY) or {}
    if found.get("reason") == REASON_XID:
        return _xid_taint(str(found.get("message") or ""))
    message = str(found.get("message") or "").lower()
    if any(marker in message for marker in _LOST):
        return DeviceTaint(TAINT_KEY, GPU_LOST, NO_EXECUTE)
    if any(marker in message for marker in _RESET):
        return DeviceTaint(TAINT_KEY, GPU_RESET_REQUIRED, NO_EXECUTE)
    # The condition's reason, made a label value: a reason is CamelCase, but nothing enforces it.
    value = label_value(str(found.get("reason") or "")) or UNHEALTHY_VALUE
    return DeviceTaint(TAINT_KEY, value, NO_SCHEDULE)


def _xid_taint(message: str) -> DeviceTaint:
    """A fatal Xid's taint: the message begins with its number (xid.verdict writes it so)."""
    number = xid_of_message(message)
    kind = None if number is None else classify(number).kind
    if kind is XidClass.CARD_LOST:
        return DeviceTaint(TAINT_KEY, GPU_LOST, NO_EXECUTE)
    if kind is XidClass.RESET_REQUIRED:
        return DeviceTaint(TAINT_KEY, GPU_RESET_REQUIRED, NO_EXECUTE)
    return DeviceTaint(TAINT_KEY, REASON_XID, NO_SCHEDULE)  # degraded: its Pods may finish


def tainted(offers: CardOffers, taint: DeviceTaint) -> CardOffers:
    """The same offers, each carrying ``taint``."""
    changed = [dataclasses.replace(offer, taints=(*offer.taints, taint)) for offer in offers.offers]
    return CardOffers(offers.address, offers.counter_set, changed)


def card_offers_with_health(
    card: dict[str, Any], policy: OfferPolicy, active: ActiveMode, taints: bool
) -> CardOffers | None:
    """What a card offers now (``vfio_offers.offered``); with ``taints``, an unhealthy card that is
    otherwise eligible offers the same, tainted, instead of nothing."""
    found = offered(card, policy, active)
    if found is not None or not taints or not eligible(card, healthy=False):
        return found
    taint = health_taint(card)
    return None if taint is None else tainted(card_offers(card, policy, active), taint)


def taint_json(taint: DeviceTaint) -> dict[str, str]:
    """No ``timeAdded``: the API server sets it (``keep_time_added`` carries it over)."""
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def _stored_times(stored: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str, str], str]:
    times: dict[tuple[str, str, str, str], str] = {}
    for obj in stored:
        for device in (obj.get("spec") or {}).get("devices") or []:
            for taint in device.get("taints") or []:
                if taint.get("timeAdded"):
                    key = (str(device.get("name")), str(taint.get("key")), str(taint.get("value", "")))
                    times[(*key, str(taint.get("effect")))] = str(taint["timeAdded"])
    return times


def keep_time_added(desired: Iterable[dict[str, Any]], stored: Iterable[Mapping[str, Any]]) -> None:
    """Gives each desired taint the ``timeAdded`` the server stored for the same device and taint
    (key, value, effect), so an unchanged taint compares equal and is not written again; a new
    taint gets none and the server sets it."""
    times = _stored_times(stored)
    for manifest in desired:
        for device in manifest["spec"].get("devices") or []:
            for taint in device.get("taints") or []:
                key = (str(device["name"]), taint["key"], taint.get("value", ""), taint["effect"])
                if "timeAdded" not in taint and key in times:
                    taint["timeAdded"] = times[key]


def device_taints(device: Mapping[str, Any]) -> list[DeviceTaint]:
    """The taints of a published device (a ResourceSlice's ``devices[]`` entry)."""
    return [
        DeviceTaint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in device.get("taints") or []
        if isinstance(t, Mapping)
    ]


def describe(taint: DeviceTaint) -> str:
    """As kubectl writes taints: ``key=value:effect``."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"
