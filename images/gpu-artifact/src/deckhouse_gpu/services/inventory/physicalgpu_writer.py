# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Writes the agent's part of a PhysicalGPU without losing anybody else's (DESIGN.md D8).

Every write is a merge patch of only the fields that changed, guarded by the resourceVersion
it was computed from; on a conflict the object is read again and the patch recomputed.
"""

from __future__ import annotations

import logging
from typing import Any

from deckhouse_gpu.domain.inventory.desired import DesiredGPU, change_for
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, AlreadyExists, Conflict, KubeAPI, NotFound

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5


class PhysicalGPUWriter:
    def __init__(self, api: KubeAPI) -> None:
        self.api = api

    def create(self, desired: DesiredGPU, owner: dict[str, Any] | None) -> dict[str, Any]:
        manifest = desired.manifest(owner)
        manifest.pop("status")  # ignored on create: the status subresource is written next
        try:
            created = self.api.create(PHYSICAL_GPUS, manifest)
        except AlreadyExists:
            # Listed before another writer (an earlier run of ours) created it: converge instead.
            created = self.api.get(PHYSICAL_GPUS, desired.name)
        return self.update(desired, created, owner)

    def update(
        self, desired: DesiredGPU, stored: dict[str, Any], owner: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                return self._apply(desired, stored, owner)
            except Conflict:
                log.debug("conflict, re-reading", extra={"physicalgpu": desired.name})
                stored = self.api.get(PHYSICAL_GPUS, desired.name)
        return self._apply(desired, stored, owner)

    def _apply(
        self, desired: DesiredGPU, stored: dict[str, Any], owner: dict[str, Any] | None
    ) -> dict[str, Any]:
        change = change_for(desired, stored, owner)
        if change.metadata:
            patch = {"metadata": {**change.metadata, "resourceVersion": _rv(stored)}}
            stored = self.api.patch(PHYSICAL_GPUS, desired.name, patch)
        if change.status:
            patch = {"metadata": {"resourceVersion": _rv(stored)}, "status": change.status}
            stored = self.api.patch(PHYSICAL_GPUS, desired.name, patch, subresource="status")
        return stored

    def delete(self, name: str, uid: str) -> bool:
        """Deletes this very object (by uid); False when it is already gone or was replaced."""
        try:
            self.api.delete(PHYSICAL_GPUS, name, uid=uid or None)
        except (NotFound, Conflict):
            return False
        return True


def _rv(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))
