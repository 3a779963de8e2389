# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceClaim.status.devices as a real prepare on a simulated node writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS
from testkit.prepare_world import allocate, build_world

A30, A30B = "0000:17:00.0", "0000:31:00.0"
ON_A30, ON_A30B = "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-31-00-0-mig-1g-6gb-0"


def _ref(claim: dict[str, Any]) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def test_mig_devices_at_one_placement_on_two_cards_report_their_own_uuids(tmp_path: Path) -> None:
    world = build_world(tmp_path, {A30: "a30", A30B: "a30"})
    claim = allocate(world.api, "two-cards", ON_A30, ON_A30B)
    result = world.service().prepare([_ref(claim)])[_ref(claim).uid]
    assert result.error == ""

    created = {}
    for card in (A30, A30B):
        (instance,) = world.mig.instances(card)
        assert instance.placement_start == 0  # the same placement on both cards is the point
        created[card] = instance.uuid
    devices = world.api.get(RESOURCE_CLAIMS, "two-cards", namespace="ns")["status"]["devices"]
    reported = {device["device"]: device["data"] for device in devices}
    assert reported[ON_A30] == {"card": A30, "kind": "MIG", "migUUID": created[A30]}
    assert reported[ON_A30B] == {"card": A30B, "kind": "MIG", "migUUID": created[A30B]}
    assert created[A30] != created[A30B]
