# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Device taints per version and the tolerations that let a request through, copied into the
result (DESIGN.md F3, F4)."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.allocation.semantics import Semantics
from tests.domain.allocation.small_slices import V134, V135
from tests.support.allocation import World, claim_object, device, exactly, resource_slice


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
