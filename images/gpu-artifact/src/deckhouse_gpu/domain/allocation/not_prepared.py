# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Claims allocated devices of this driver and reserved for a Pod, whose devices gpu-handler has
not reported prepared: the Pod waits on its node (ContainerCreating) while they stay so.

gpu-handler writes an entry of the driver for every device it prepared into the claim's
``status.devices`` (services/prepare/claim_status.py), so a device without one is not prepared yet. A
claim reserved for no Pod is not waited on: the kubelet prepares a claim only for a Pod it runs.
Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.allocation.metrics import DRIVER, allocation_node


@dataclass(frozen=True)
class NotPrepared:
    uid: str
    node: str  # the node of the allocation ("" when it names none)


def _reserved(status: Mapping[str, Any]) -> bool:
    return any(
        isinstance(entry, Mapping) and entry.get("resource") == "pods"
        for entry in status.get("reservedFor") or ()
    )


def not_prepared(claims: Iterable[Mapping[str, Any]]) -> list[NotPrepared]:
    found = []
    for claim in claims:
        status = claim.get("status") or {}
        allocation = status.get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or ()
        wanted = {
            (str(r.get("pool")), str(r.get("device")))
            for r in results
            if r.get("driver") == DRIVER and not r.get("adminAccess")
        }
        if not wanted or not _reserved(status):
            continue
        reported = {
            (str(d.get("pool")), str(d.get("device")))
            for d in status.get("devices") or ()
            if isinstance(d, Mapping) and d.get("driver") == DRIVER
        }
        if wanted - reported:
            uid = str((claim.get("metadata") or {}).get("uid", ""))
            found.append(NotPrepared(uid, allocation_node(allocation)))
    return found
