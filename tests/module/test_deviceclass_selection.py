# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every selector of the example DeviceClasses, evaluated by the module's DRA CEL engine
(deckhouse_gpu/k8s_semantics/cel) against every device of the pools rendered from simulated cards of each
model, for 1.34 and 1.35, on a plain node, a sharing node, a node with MIG switched off and after the
fallback: each class must select exactly the devices it is meant for and fail on none (an evaluation
error fails the Pod's scheduling on a cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.naming import physical_name
from tests.module import deviceclass_examples
from tests.module.deviceclass_examples import (
    ADDRESSES,
    CLASSES,
    DRIVER,
    FOREIGN,
    MODELS,
    VARIANTS,
    Offer,
    Variant,
    intended_offers,
    intent,
    rendered_devices,
    selected,
)

# The shared fixture, bound here so that pytest finds it for this module's tests.
cards = deviceclass_examples.cards

CASES = [(minor, variant) for minor in (34, 35) for variant in VARIANTS]


@pytest.mark.parametrize(("minor", "variant"), CASES, ids=[f"1.{m}-{v.name}" for m, v in CASES])
def test_each_class_selects_exactly_its_devices(
    cards: list[dict[str, Any]], minor: int, variant: Variant
) -> None:
    devices = [(node, DRIVER, device) for node, device in rendered_devices(cards, minor, variant)]
    offers = intended_offers(cards, variant)
    assert {(n, d["name"]) for n, _, d in devices} == {(o.node, o.name) for o in offers}
    devices += [("node-a30", "gpu.nvidia.com", device) for device in FOREIGN]
    problems = []
    for name in CLASSES:
        chosen, errors = selected(name, devices)
        wanted = {(o.node, o.name) for o in offers if intent(name)(o)}
        if errors or chosen != wanted:
            problems.append(
                f"{name}: extra {sorted(chosen - wanted)}, missing {sorted(wanted - chosen)}, {errors[:3]}"
            )
    assert not problems, "\n".join(problems)


def test_every_model_and_profile_has_a_class(cards: list[dict[str, Any]]) -> None:
    plain = intended_offers(cards, VARIANTS[0])
    kinds = {(o.model, "mig", o.profile) for o in plain if o.kind == "mig"}
    kinds |= {(m, kind, None) for m in MODELS for kind in ("whole", "shared")}
    covered = set()
    for name in CLASSES:
        covered |= {k for k in kinds if intent(name)(Offer("", "", k[0], k[1], 0, k[2]))}
    assert kinds - covered == set()


def test_examples_pick_the_a30_devices(cards: list[dict[str, Any]]) -> None:
    devices = [(n, DRIVER, d) for n, d in rendered_devices(cards, 35, VARIANTS[0])]
    a30 = [physical_name(address) for address in ADDRESSES["a30"]]
    assert selected("gpu-a30", devices)[0] == {("node-a30", name) for name in a30}
    assert selected("gpu-a30-mig-1g.6gb", devices)[0] == {
        ("node-a30", f"{n}-mig-1g-6gb-{s}") for n in a30 for s in range(4)
    }
    assert selected("gpu-memory-40gi", devices)[0] == {(f"node-{m}", "gpu-0000-3b-00-0") for m in MODELS[1:5]}
    assert selected("gpu-a30-shared", devices)[0] == set()
