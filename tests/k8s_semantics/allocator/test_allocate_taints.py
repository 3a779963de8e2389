# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Device taints per version and the tolerations that let a request through, copied into the
result (KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import V134, V135
from tests.support.allocation import World, claim_object, device, exactly, first_available, resource_slice


@pytest.mark.parametrize(
    ("effect", "semantics", "fits"),
    [
        ("NoSchedule", V135, False),
        ("NoExecute", V135, False),
        ("None", V135, True),  # 1.35 enforces only NoSchedule and NoExecute
        ("None", V134, False),  # 1.34 wants every taint tolerated
        ("NoSchedule", Semantics(taints=False), True),
    ],
)
def test_taints(effect: str, semantics: Semantics, fits: bool) -> None:
    world = World(
        [resource_slice("s", [device("a", taints=[{"key": "k", "value": "v", "effect": effect}])])],
        semantics=semantics,
    )
    assert (world.devices(claim_object("c", exactly("gpu"))) is not None) is fits


@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        ({"key": "k", "operator": "Equal", "value": "v"}, True),
        ({"key": "k", "operator": "Equal", "value": "w"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_tolerations_are_matched_and_copied_into_the_result(toleration: dict[str, str], fits: bool) -> None:
    world = World(
        [resource_slice("s", [device("a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])])]
    )
    outcome = world.allocate(claim_object("c", exactly("gpu", tolerations=[toleration])))
    assert (outcome.allocations is not None) is fits
    if outcome.allocations:
        (result,) = outcome.allocations[0]["devices"]["results"]
        assert result["tolerations"] == [{k: v for k, v in {"operator": "Equal", **toleration}.items()}]


UNHEALTHY = {"key": "gpu.deckhouse.io/unhealthy", "value": "GPULost", "effect": "NoExecute"}


def test_an_unknown_operator_tolerates_nothing() -> None:
    """Upstream's ToleratesTaint answers false for an operator other than Equal or Exists."""
    world = World([resource_slice("s", [device("a", taints=[UNHEALTHY])])])
    odd = {"key": UNHEALTHY["key"], "operator": "Matches", "value": "GPULost"}
    outcome = world.allocate(claim_object("c", exactly("gpu", tolerations=[odd])))
    assert outcome.error is None
    assert outcome.allocations is None


def test_first_available_takes_the_tolerations_of_each_subrequest() -> None:
    """The first subrequest does not tolerate the health taint, the second does: the second wins."""
    world = World([resource_slice("s", [device("a", taints=[UNHEALTHY])])])
    tolerating = {"name": "any", "deviceClassName": "gpu", "tolerations": [{"operator": "Exists"}]}
    strict = {"name": "strict", "deviceClassName": "gpu"}
    claim = claim_object("c", first_available("gpu", strict, tolerating))
    outcome = world.allocate(claim)
    assert outcome.allocations is not None
    (result,) = outcome.allocations[0]["devices"]["results"]
    assert (result["request"], result["device"]) == ("gpu/any", "a")
    assert result["tolerations"] == [{"operator": "Exists"}]


def test_an_untolerated_taint_moves_the_claim_to_an_untainted_device() -> None:
    world = World([resource_slice("s", [device("a", taints=[UNHEALTHY]), device("b")])])
    assert world.devices(claim_object("c", exactly("gpu"))) == [["b"]]
    assert world.devices(claim_object("d", exactly("gpu"))) is None  # a is left, and tainted


def test_the_134_scheduler_copies_no_tolerations_into_the_result() -> None:
    """Seen on kube-scheduler 1.34.9 (tests/real/test_allocator_vs_scheduler.py): the device is
    allocated under the toleration, but its result carries none; 1.35 copies them."""
    slices = [resource_slice("s", [device("a", taints=[UNHEALTHY])])]
    claim = claim_object("c", exactly("gpu", tolerations=[{"operator": "Exists"}]))
    (result,) = World(slices, semantics=V134).allocate(claim).allocations[0]["devices"]["results"]  # type: ignore[index]
    assert result["device"] == "a"
    assert "tolerations" not in result
    (result,) = World(slices, semantics=V135).allocate(claim).allocations[0]["devices"]["results"]  # type: ignore[index]
    assert result["tolerations"] == [{"operator": "Exists"}]
