# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Errors rather than misfits: claims the scheduler refuses and selectors that fail to evaluate;
and the inventory builder that reparses only changed slices (KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

import re

import pytest

from deckhouse_gpu.k8s_semantics.resources.claims import ClaimError
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.k8s_semantics.allocator.small_slices import V135, gpus, share
from tests.support.allocation import (
    World,
    claim_object,
    device_class,
    exactly,
    first_available,
    resource_slice,
)


@pytest.mark.parametrize(
    ("claim", "semantics", "message"),
    [
        (
            claim_object("c", exactly("gpu", "missing")),
            V135,
            "claim ns/c request gpu: device class missing not found",
        ),
        (
            claim_object("c", exactly("gpu", selectors=[{"cel": {"expression": " "}}])),
            V135,
            "claim ns/c request gpu: empty CEL selector",
        ),
        (
            share("c", "10"),
            Semantics(consumable=False),
            "claim ns/c request gpu: capacity requests require the DRAConsumableCapacity feature",
        ),
        (
            claim_object("c", first_available("r", {"name": "s", "deviceClassName": "gpu"})),
            Semantics(prioritized_list=False),
            "claim ns/c request r: firstAvailable requires the DRAPrioritizedList feature",
        ),
        (
            claim_object("c", exactly("gpu", adminAccess=True)),
            Semantics(admin_access=False),
            "claim ns/c request gpu: adminAccess requires the DRAAdminAccess feature",
        ),
        (
            claim_object("c", exactly("gpu", count=33)),
            V135,
            "claim ns/c asks for at least 33 devices, more than 32",
        ),
    ],
)
def test_claims_the_scheduler_refuses(claim: dict[str, object], semantics: Semantics, message: str) -> None:
    world = World([resource_slice("s", gpus("a"))], semantics=semantics)
    with pytest.raises(ClaimError, match=re.escape(message)):
        world.claim(claim)


def test_a_selector_that_fails_to_evaluate_is_an_error_not_a_misfit() -> None:
    world = World(
        [resource_slice("s", gpus("a"))],
        [device_class("gpu", 'device.attributes["gpu.deckhouse.io"].missing == "x"')],
    )
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.allocations is None
    assert outcome.error is not None
    assert outcome.error.startswith("CEL selector failed: ")


def test_the_inventory_builder_parses_only_changed_slices() -> None:
    from deckhouse_gpu.k8s_semantics.resources.model import InventoryBuilder  # noqa: PLC0415

    first = resource_slice("a", gpus("x"))
    second = resource_slice("b", gpus("y"))
    first["metadata"]["resourceVersion"] = "1"
    second["metadata"]["resourceVersion"] = "1"
    builder = InventoryBuilder()
    before = builder.build([first, second])
    second["metadata"]["resourceVersion"] = "2"
    second["spec"]["devices"][0]["name"] = "z"
    after = builder.build([first, second])
    assert after.slices[0] is before.slices[0]  # unchanged: the same parsed slice, warm caches
    assert [d.name for d in after.slices[1].devices] == ["z"]
    assert [s.name for s in builder.build([second]).slices] == ["b"]
    unversioned = resource_slice("c", gpus("w"))
    assert builder.build([unversioned]).slices[0] is not builder.build([unversioned]).slices[0]
