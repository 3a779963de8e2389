# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``ResourceClaim.status.devices`` for this driver's devices (KEP-4817): what was prepared, for
people and tools reading the claim. Best effort: a failure here never fails a prepare."""

from __future__ import annotations

import logging
from typing import Any

from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, KubeAPI, KubeError, NotFound
from deckhouse_gpu.services.status_writer import patch_status

log = logging.getLogger(__name__)


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


def publish_devices(api: KubeAPI, entry: ClaimEntry, now: str, prepared: bool) -> None:
    """Writes (``prepared``) or clears this driver's entries, keeping other drivers' ones."""
    ours = _ours(entry, now) if prepared else []
    _write(api, entry.namespace, entry.name, entry.uid, ours)


def clear_devices(api: KubeAPI, namespace: str, name: str, uid: str) -> None:
    """Clears this driver's entries of a claim the checkpoint no longer knows (a crash between
    forgetting the claim and clearing its status must not leave stale entries behind)."""
    _write(api, namespace, name, uid, [])


def _write(api: KubeAPI, namespace: str, name: str, uid: str, ours: list[dict[str, Any]]) -> None:
    try:
        claim = api.get(RESOURCE_CLAIMS, name, namespace=namespace)
        if claim.get("metadata", {}).get("uid") != uid:
            return
        patch_status(api, RESOURCE_CLAIMS, claim, lambda status: _patch(status, ours), namespace=namespace)
    except NotFound:
        return
    except KubeError as error:
        log.warning("ResourceClaim status not updated", extra={"claim": uid, "error": str(error)})
