# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceClaim.status.devices as a real prepare on a simulated node writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.simulator.api.feature_gates import gates_off
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


class Recorded:
    """The prepare service's metrics, as they are told."""

    def __init__(self) -> None:
        self.device_status: list[bool] = []

    def observe_prepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None:
        pass

    def observe_unprepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None:
        pass

    def observe_device_status(self, kept: bool) -> None:
        self.device_status.append(kept)


def test_an_api_server_that_drops_status_devices_is_reported(tmp_path: Path) -> None:
    world = build_world(tmp_path, {A30: "a30"})
    recorded = Recorded()
    service = world.service(observer=PrepareObserver(recorded))
    kept = allocate(world.api, "kept", ON_A30)
    assert service.prepare([_ref(kept)])[_ref(kept).uid].error == ""
    assert recorded.device_status == [True]

    world.api.drop_fields = gates_off(device_status=True)  # DRAResourceClaimDeviceStatus off
    service.unprepare([_ref(kept)])
    dropped = allocate(world.api, "dropped", ON_A30)
    result = service.prepare([_ref(dropped)])[_ref(dropped).uid]
    assert result.error == ""  # the prepare itself is not harmed
    assert "devices" not in world.api.get(RESOURCE_CLAIMS, "dropped", namespace="ns").get("status", {})
    assert recorded.device_status == [True, False]
