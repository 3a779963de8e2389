# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Decides, from one scan and the stored objects, what to create, update and delete.

A card is deleted only when it is really gone: a udev ``remove`` event for its address, or
absence from ``threshold`` consecutive successful scans. A card whose sysfs files could not be
read is present: its object is left alone, never deleted because one read failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deckhouse_gpu.domain.inventory.desired import DesiredGPU, Removal, SyncPlan, change_for


def stored_address(obj: Mapping[str, Any]) -> str | None:
    address = ((obj.get("status") or {}).get("pciInfo") or {}).get("address")
    return address if isinstance(address, str) else None


def belongs_to(obj: Mapping[str, Any], node_name: str) -> bool:
    """The label selector already matched; a recorded node name must agree too (hashed labels)."""
    recorded = ((obj.get("status") or {}).get("nodeInfo") or {}).get("nodeName")
    return recorded is None or recorded == node_name


def plan_sync(
    node_name: str,
    desired: Iterable[DesiredGPU],
    stored: Iterable[Mapping[str, Any]],
    unreadable: frozenset[str],
    removed: frozenset[str],
    absences: Mapping[str, int],
    threshold: int,
    owner: dict[str, Any] | None = None,
) -> SyncPlan:
    plan = SyncPlan()
    wanted = {gpu.name: gpu for gpu in desired}
    seen: set[str] = set()
    for obj in stored:
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if not belongs_to(obj, node_name):
            continue
        seen.add(name)
        gpu = wanted.get(name)
        if gpu is not None:
            if not change_for(gpu, dict(obj), owner).empty:
                plan.update.append((gpu, dict(obj)))
            continue
        address = stored_address(obj)
        if address is not None and address in unreadable:
            continue
        uid = str(metadata.get("uid", ""))
        if address is not None and address in removed:
            plan.delete.append(Removal(name, uid, address, "the kernel reported the device removed"))
            continue
        count = absences.get(name, 0) + 1
        if count >= threshold:
            reason = f"the device was absent from {count} consecutive scans"
            plan.delete.append(Removal(name, uid, address, reason))
        else:
            plan.suspected_gone[name] = count
    plan.create.extend(gpu for name, gpu in sorted(wanted.items()) if name not in seen)
    return plan
