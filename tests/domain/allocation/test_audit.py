# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The audit of the allocation invariant (DESIGN.md S8.1) over allocated claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from deckhouse_gpu.domain.allocation.audit import (
    CAPACITY,
    COUNTERS,
    EXCLUSIVE,
    MIXED_MODES,
    MIXED_SHARING,
    Violation,
    audit,
)
from deckhouse_gpu.domain.allocation.card_sharing import card_sharing
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from tests.support.allocation import device, resource_slice

CARD = "0000:3b:00.0"
MIG_MPS = {"apiVersion": LEGACY_API_VERSION, "kind": "MIGConfig", "sharing": {"strategy": "MPS"}}


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


def sharing(strategy: str, **settings: Any) -> dict[str, Any]:
    """The parameters of a GPUConfig with this sharing."""
    return {
        "apiVersion": LEGACY_API_VERSION,
        "kind": "GPUConfig",
        "sharing": {"strategy": strategy, **settings},
    }


def entry(parameters: Any, source: str = "FromClaim", requests: list[str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "source": source,
        "opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters},
    }
    if requests is not None:
        found["requests"] = requests
    return found


def share(name: str, percent: str, *config: Any) -> dict[str, Any]:
    """A share of the shared card whose allocation carries ``config``: entries, or parameters."""
    entries = [c if "opaque" in c else entry(c) for c in config]
    return claim(
        name,
        {"device": "other-shared", "shareID": f"id-{name}", "consumedCapacity": {"sharePercent": percent}},
        config=entries,
    )


def run(*claims: dict[str, Any]) -> list[Violation]:
    return audit(build_inventory(card_slices()), claims, card_sharing)


MPS = sharing("MPS")
LONG = sharing("TimeSlicing", timeSlicing={"interval": "Long"})
DEFAULT = sharing("TimeSlicing", timeSlicing={"interval": "Default"})


def test_a_consistent_cluster_has_no_violation() -> None:
    assert run(claim("a", {"device": "mig-0"}), share("b", "50", MPS), share("c", "50", MPS)) == []


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
    found = run(share("a", "50", MPS), share("b", "50", sharing("TimeSlicing")))
    assert found == [
        Violation(
            MIXED_SHARING,
            ("ns/a", "ns/b"),
            "w1",
            "other-shared",
            "shares of other-shared ask for different sharing of the card (MPS: ns/a; TimeSlicing "
            "(interval Default): ns/b): every share of one card must use the same strategy and, for "
            "TimeSlicing, the same interval (no sharing config counts as TimeSlicing at interval "
            "Default); gpu-handler refuses to prepare a share that differs from those prepared on the card",
        )
    ]


@pytest.mark.parametrize(
    "configs",
    [
        ((), (DEFAULT,)),  # no sharing config is what the card does by itself
        ((), (sharing("TimeSlicing"),)),
        ((), ()),
        ((entry(MIG_MPS),), (DEFAULT,)),  # a MIG config does not apply to a whole card
        ((LONG,), (sharing("TimeSlicing", timeSlicing={"interval": "Long"}),)),
        (
            (sharing("MPS", mps={"defaultActiveThreadPercentage": 20}),),
            (sharing("MPS", mps={"defaultPinnedDeviceMemoryLimit": "4Gi"}),),
        ),  # MPS limits are each client's own
        ((MPS,), ({"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "Nope"}},)),
        (
            (MPS,),
            ({"kind": "VFIOConfig", "apiVersion": LEGACY_API_VERSION},),
        ),  # prepare refuses it: it never meets
    ],
)
def test_shares_that_can_sit_on_one_card(configs: tuple[tuple[Any, ...], tuple[Any, ...]]) -> None:
    assert run(share("a", "50", *configs[0]), share("b", "50", *configs[1])) == []


@pytest.mark.parametrize(
    ("first", "second", "listing"),
    [
        ((), (MPS,), "MPS: ns/b; TimeSlicing (interval Default): ns/a"),
        ((DEFAULT,), (LONG,), "TimeSlicing (interval Default): ns/a; TimeSlicing (interval Long): ns/b"),
        ((), (LONG,), "TimeSlicing (interval Default): ns/a; TimeSlicing (interval Long): ns/b"),
    ],
)
def test_shares_that_cannot_sit_on_one_card(
    first: tuple[Any, ...], second: tuple[Any, ...], listing: str
) -> None:
    found = run(share("a", "50", *first), share("b", "50", *second))
    assert [(v.kind, v.claims, v.subject) for v in found] == [
        (MIXED_SHARING, ("ns/a", "ns/b"), "other-shared")
    ]
    assert f"ask for different sharing of the card ({listing}): " in found[0].message


def test_the_config_is_resolved_as_prepare_resolves_it() -> None:
    # The claim's entry comes after the class's and wins; an entry for another request is skipped.
    overridden = share("a", "40", entry(MPS, "FromClass"), entry(LONG))
    other_request = share("b", "30", entry(MPS, requests=["other"]), entry(LONG, requests=["r"]))
    assert run(overridden, other_request) == []
    found = run(overridden, share("c", "30", entry(LONG, "FromClass"), entry(MPS, requests=["r"])))
    assert [(v.kind, v.claims) for v in found] == [(MIXED_SHARING, ("ns/a", "ns/c"))]


def test_three_shares_are_named_by_what_they_ask() -> None:
    found = run(share("a", "30"), share("b", "30", MPS), share("c", "30", DEFAULT))
    assert found[0].claims == ("ns/a", "ns/b", "ns/c")
    assert "(MPS: ns/b; TimeSlicing (interval Default): ns/a, ns/c)" in found[0].message


def test_only_shares_of_one_card_meet() -> None:
    # A MIG instance is never shared between claims: its config never meets another claim's.
    assert run(claim("m", {"device": "mig-0"}, config=[entry(MIG_MPS)]), share("b", "50", LONG)) == []


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
