# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``ResourceClaim.status.devices`` for this driver's devices (KEP-4817): what was prepared, for
people and tools reading the claim. Best effort: a failure here never fails a prepare.

An API server with the feature gate DRAResourceClaimDeviceStatus off accepts the write and drops the
field; a write of entries that are missing from the object it returns says so (``publish_devices``
returns False), so gpu-handler can report it instead of every claim looking unprepared."""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.ports.dra_plugin import PreparedDevice
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, KubeAPI, KubeError, NotFound, Unavailable
from deckhouse_gpu.services.runtime.status_writer import patch_status

log = logging.getLogger(__name__)
WRITE_ATTEMPTS = 4
WRITE_BACKOFF_SECONDS = 0.1


def claim_object(entry: ClaimEntry) -> dict[str, Any]:
    """What an Event about the entry's claim regards."""
    meta = {"name": entry.name, "namespace": entry.namespace, "uid": entry.uid}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta}


def prepared_devices(entry: ClaimEntry) -> tuple[PreparedDevice, ...]:
    return tuple(
        PreparedDevice(
            # The kubelet matches containers by the request name, without a subrequest suffix.
            request_names=(plan.request.split("/", 1)[0],),
            pool_name=plan.pool,
            device_name=plan.device,
            cdi_device_ids=entry.cdi_device_ids.get(plan.device, ()),
            share_id=plan.share_id,
        )
        for plan in entry.devices
    )


def _ours(entry: ClaimEntry, now: str) -> list[dict[str, Any]]:
    # Placements are per card: two cards of one claim can each hold an instance at the same start.
    uuids: dict[tuple[str, int | None], str] = {(r.card, r.placement_start): r.uuid for r in entry.mig}
    devices = []
    for plan in entry.devices:
        item: dict[str, Any] = {"driver": DRIVER, "pool": plan.pool, "device": plan.device}
        if plan.share_id:
            item["shareID"] = plan.share_id
        data: dict[str, Any] = {"card": plan.card, "kind": plan.kind}
        uuid = uuids.get((plan.card, plan.placement_start)) if plan.kind == "MIG" else None
        if uuid is not None:
            data["migUUID"] = uuid
        item["data"] = data
        item["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Prepared",
                "message": "",
                "lastTransitionTime": now,
            }
        ]
        devices.append(item)
    return devices


def _patch(status: dict[str, Any] | None, ours: list[dict[str, Any]]) -> dict[str, Any]:
    current = (status or {}).get("devices") or []
    others = [device for device in current if device.get("driver") != DRIVER]
    wanted = others + ours
    return {} if wanted == current else {"devices": wanted or None}


def publish_devices(api: KubeAPI, entry: ClaimEntry, now: str, prepared: bool) -> bool | None:
    """Writes (``prepared``) or clears this driver's entries, keeping other drivers' ones. Whether
    the claim holds them afterwards when written; None when cleared or nothing could be told."""
    ours = _ours(entry, now) if prepared else []
    return _write(api, entry.namespace, entry.name, entry.uid, ours)


def clear_devices(api: KubeAPI, namespace: str, name: str, uid: str) -> None:
    """Clears this driver's entries of a claim the checkpoint no longer knows (a crash between
    forgetting the claim and clearing its status must not leave stale entries behind)."""
    _write(api, namespace, name, uid, [])


def _kept(stored: dict[str, Any], ours: list[dict[str, Any]]) -> bool | None:
    if not ours:
        return None
    held = {
        (device.get("pool"), device.get("device"))
        for device in (stored.get("status") or {}).get("devices") or ()
        if isinstance(device, dict) and device.get("driver") == DRIVER
    }
    return {(device["pool"], device["device"]) for device in ours} <= held


def _write(api: KubeAPI, namespace: str, name: str, uid: str, ours: list[dict[str, Any]]) -> bool | None:
    # A passing server failure (429, 5xx, a dropped connection) is tried again a few times, with
    # jittered backoff: the kubelet does not call again for a prepared claim, so a write lost here
    # stays lost until the plugin restarts.
    for attempt in range(WRITE_ATTEMPTS):
        try:
            claim = api.get(RESOURCE_CLAIMS, name, namespace=namespace)
            if claim.get("metadata", {}).get("uid") != uid:
                return None
            stored, _ = patch_status(
                api, RESOURCE_CLAIMS, claim, lambda current: _patch(current, ours), namespace=namespace
            )
            return _kept(stored, ours)
        except NotFound:
            return None
        except Unavailable as error:
            if attempt + 1 < WRITE_ATTEMPTS:
                time.sleep(WRITE_BACKOFF_SECONDS * 2**attempt * random.uniform(0.5, 1.5))  # noqa: S311
                continue
            log.warning("ResourceClaim status not updated", extra={"claim": uid, "error": str(error)})
        except KubeError as error:
            log.warning("ResourceClaim status not updated", extra={"claim": uid, "error": str(error)})
        return None
    return None
