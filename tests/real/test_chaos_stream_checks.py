# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chaos-real stream's judgements (tests/real/chaos_stream.py) refuse what they exist to catch:
offers that ignore a card's prepared mode, a device allocated twice, a card given whole and in
parts, a share over 100 %, an allocation for another node. No cluster: the node's answers are
given here, so a check that accepted everything fails these."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from tests.real.chaos_node import ChaosGpuNode
from tests.real.chaos_stream import KINDS, PodStream, Workload
from tests.real.handler_world import CARD_A, CARD_B, WHOLE_A, WHOLE_B

KIND = {kind.name: kind for kind in KINDS}
NODE = "chaos-n1"


class Refused(AssertionError):
    pass


class _Cluster:
    def __init__(self, claims: list[dict[str, Any]]) -> None:
        self.claims = claims

    def request(self, method: str, path: str) -> dict[str, Any]:
        assert (method, path) == ("GET", "/apis/resource.k8s.io/v1/namespaces/chaos-pods/resourceclaims")
        return {"items": self.claims}


class _Node:
    node = NODE
    namespace = "chaos-pods"

    def __init__(self, claims: list[dict[str, Any]]) -> None:
        self.cluster = _Cluster(claims)


def stream(claims: list[dict[str, Any]] | None = None, held: dict[str, str] | None = None) -> PodStream:
    """A stream whose running Pods hold the cards as ``held`` says (PCI address: kind)."""
    made = PodStream(cast(ChaosGpuNode, _Node(claims or [])), random.Random(0), Refused)  # noqa: S311 - no secret
    made.live = [
        Workload(f"p{i}", KIND[kind], card=card) for i, (card, kind) in enumerate((held or {}).items())
    ]
    return made


def idle() -> dict[str, Any]:
    devices: dict[str, Any] = {}
    for whole in (WHOLE_A, WHOLE_B):
        devices[whole] = {"name": whole, "consumesCounters": [{"counterSet": whole}]}
        for placement in range(4):
            name = f"{whole}-mig-1g-6gb-{placement}"
            devices[name] = {"name": name, "consumesCounters": [{"counterSet": whole}]}
    return {"devices": devices, "counters": {w: {"name": w} for w in (WHOLE_A, WHOLE_B)}}


def without(offers: dict[str, Any], *prefixes: str, exact: tuple[str, ...] = ()) -> dict[str, Any]:
    devices = {n: d for n, d in offers["devices"].items() if not n.startswith(prefixes) and n not in exact}
    return {"devices": devices, "counters": dict(offers["counters"])}


def test_an_idle_node_offers_everything() -> None:
    assert stream().offers_match(idle(), idle())
    assert not stream().offers_match(without(idle(), f"{WHOLE_A}-mig-"), idle())


def test_a_card_held_whole_offers_no_mig_and_one_in_mig_mode_no_whole_card() -> None:
    held = stream(held={CARD_A: "whole", CARD_B: "mig"})
    assert not held.offers_match(idle(), idle())  # the offers ignore what is prepared
    expected = without(idle(), f"{WHOLE_A}-mig-", exact=(WHOLE_B,))
    assert held.offers_match(expected, idle())
    assert not held.offers_match(without(expected, f"{WHOLE_B}-mig-1g-6gb-3"), idle())


def test_a_card_passed_to_a_vm_is_offered_whole_with_what_it_consumed() -> None:
    held = stream(held={CARD_A: "vfio"})
    expected = without(idle(), f"{WHOLE_A}-mig-")
    # NVML cannot see it: its attributes are read anew, its counters stay (DESIGN.md D7).
    expected["devices"][WHOLE_A] = {"name": WHOLE_A, "consumesCounters": [{"counterSet": WHOLE_A}]}
    assert held.offers_match(expected, idle())
    expected["devices"][WHOLE_A] = {"name": WHOLE_A}  # it no longer consumes the card's counters
    assert not held.offers_match(expected, idle())
    expected["devices"][WHOLE_A] = {"name": WHOLE_A, "consumesCounters": [{"counterSet": WHOLE_A}]}
    del expected["counters"][WHOLE_A]  # the card's counter set withdrawn
    assert not held.offers_match(expected, idle())
    # Its PhysicalGPU made anew while on vfio-pci: nothing describes its MIG counters any more.
    expected["devices"][WHOLE_A] = {"name": WHOLE_A}
    assert held.offers_match({**expected, "undescribed": [CARD_A]}, idle())


def claim(name: str, device: str, share: int | None = None, node: str = NODE) -> dict[str, Any]:
    result: dict[str, Any] = {"driver": "gpu.deckhouse.io", "pool": f"gpus/{node}", "device": device}
    if share is not None:
        result["consumedCapacity"] = {"sharePercent": str(share)}
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "values": [node]}]}]}
    allocation = {"devices": {"results": [result]}, "nodeSelector": selector}
    return {"metadata": {"name": name}, "status": {"allocation": allocation}}


def test_allocations_that_keep_the_invariants_pass() -> None:
    mig = f"{WHOLE_B}-mig-1g-6gb-"
    claims = [claim("a", WHOLE_A, 50), claim("b", WHOLE_A, 50), claim("c", mig + "0"), claim("d", mig + "1")]
    stream(claims).check_allocations()


@pytest.mark.parametrize(
    ("claims", "found"),
    [
        ([claim("a", WHOLE_A), claim("b", WHOLE_A)], "allocated to a and b"),
        ([claim("a", WHOLE_A), claim("b", f"{WHOLE_A}-mig-1g-6gb-0")], "whole and in parts"),
        ([claim("a", WHOLE_A, 50), claim("b", WHOLE_A, 60)], "shared 110 %"),
        ([claim("a", WHOLE_A, node="other")], "for another node"),
    ],
    ids=["twice", "whole-and-mig", "over-100", "other-node"],
)
def test_allocations_that_break_an_invariant_are_refused(claims: list[dict[str, Any]], found: str) -> None:
    with pytest.raises(Refused, match=found):
        stream(claims).check_allocations()
