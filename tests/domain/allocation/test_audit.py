# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The audit of the allocation invariant (DESIGN.md S8.1) over allocated claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.allocation.audit import (
    CAPACITY,
    COUNTERS,
    EXCLUSIVE,
    MIXED_MODES,
    MIXED_SHARING,
    Violation,
    audit,
)
from deckhouse_gpu.domain.allocation.model import build_inventory
from tests.support.allocation import device, resource_slice

CARD = "0000:3b:00.0"


def card_slices() -> list[dict[str, Any]]:
    common = {"pciAddress": CARD}
    whole = device(
        "card", attributes={**common, "deviceType": "Physical"}, consumes={"c0": {"memory": "24Gi"}}
    )
    migs = [
        device(f"mig-{i}", attributes={**common, "deviceType": "MIG"}, consumes={"c0": {"memory": "12Gi"}})
        for i in range(3)  # three 12Gi placements on a 24Gi card: two may overlap
    ]
    shared = device(
        "other-shared",
        multi=True,
        attributes={"pciAddress": "0000:86:00.0", "deviceType": "Physical"},
        capacity={"sharePercent": "100"},
    )
    return [
        resource_slice("counters", counters={"c0": {"memory": "24Gi"}}, count=2, node="w1", pool="gpus/w1"),
        resource_slice("devices", [whole, *migs, shared], count=2, node="w1", pool="gpus/w1"),
    ]


def claim(
    name: str, *results: Mapping[str, Any], config: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    devices: dict[str, Any] = {
        "results": [{"request": "r", "driver": "gpu.deckhouse.io", "pool": "gpus/w1", **r} for r in results]
    }
    if config:
        devices["config"] = config
    return {"metadata": {"namespace": "ns", "name": name}, "status": {"allocation": {"devices": devices}}}


def share(name: str, percent: str, strategy: str | None = None) -> dict[str, Any]:
    config = (
        [
            {
                "source": "FromClaim",
                "opaque": {"driver": "gpu.deckhouse.io", "parameters": {"strategy": strategy}},
            }
        ]
        if strategy
        else None
    )
    return claim(
        name,
        {"device": "other-shared", "shareID": f"id-{name}", "consumedCapacity": {"sharePercent": percent}},
        config=config,
    )


def strategy_of(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> str | None:
    for entry in (allocation.get("devices") or {}).get("config") or ():
        found = ((entry.get("opaque") or {}).get("parameters") or {}).get("strategy")
        if found:
            return str(found)
    return None


def run(*claims: dict[str, Any]) -> list[Violation]:
    return audit(build_inventory(card_slices()), claims, strategy_of)


def test_a_consistent_cluster_has_no_violation() -> None:
    assert run(claim("a", {"device": "mig-0"}), share("b", "50", "MPS"), share("c", "50", "MPS")) == []


def test_a_device_given_to_two_claims() -> None:
    assert run(claim("a", {"device": "mig-0"}), claim("b", {"device": "mig-0"})) == [
        Violation(EXCLUSIVE, ("ns/a", "ns/b"), "w1", "mig-0", "device mig-0 is allocated to 2 claims")
    ]


def test_mig_and_physical_on_one_card_and_its_counters() -> None:
    found = run(claim("whole", {"device": "card"}), claim("part", {"device": "mig-1"}))
    assert [v.kind for v in found] == [MIXED_MODES, COUNTERS]
    assert found[0].message == f"card {CARD} has MIG and Physical devices allocated at once"
    assert (
        found[1].message
        == "counter set c0 of pool gpu.deckhouse.io/gpus/w1 is overcommitted: memory 36Gi of 24Gi"
    )
    assert found[1].claims == ("ns/part", "ns/whole")


def test_overlapping_mig_placements_overcommit_the_counters() -> None:
    found = run(
        claim("a", {"device": "mig-0"}), claim("b", {"device": "mig-1"}), claim("c", {"device": "mig-2"})
    )
    assert [(v.kind, v.subject) for v in found] == [(COUNTERS, "c0")]


def test_shares_beyond_the_capacity() -> None:
    found = run(share("a", "60"), share("b", "60"))
    assert found == [
        Violation(
            CAPACITY,
            ("ns/a", "ns/b"),
            "w1",
            "other-shared",
            "other-shared capacity sharePercent: 120 allocated of 100",
        )
    ]


def test_shares_with_different_strategies() -> None:
    found = run(share("a", "50", "MPS"), share("b", "50", "TimeSlicing"))
    assert [v.kind for v in found] == [MIXED_SHARING]
    assert found[0].message == (
        "shares of other-shared ask for different sharing strategies (ns/a: MPS, ns/b: TimeSlicing)"
    )


def test_a_share_and_an_exclusive_allocation_of_one_device() -> None:
    found = run(share("a", "50"), claim("b", {"device": "other-shared"}))
    assert [v.kind for v in found] == [EXCLUSIVE]


def test_admin_access_other_drivers_and_vanished_devices_are_not_counted() -> None:
    admin = claim("admin", {"device": "mig-0", "adminAccess": True})
    foreign = {
        "metadata": {"namespace": "ns", "name": "f"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": "other.example.com", "pool": "gpus/w1", "device": "mig-0"}
                    ]
                }
            }
        },
    }
    gone = claim("gone", {"device": "mig-9"})
    assert run(claim("a", {"device": "mig-0"}), admin, foreign, gone) == []
