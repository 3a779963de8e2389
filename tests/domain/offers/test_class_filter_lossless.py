# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Following the classes loses nothing (DESIGN.md D19): for seeded random nodes, class sets and
claims in turn, the module's allocator (which tests/real/test_allocator_vs_scheduler.py holds to
the real kube-scheduler, filtered layouts included) places every claim on the layout filtered by
the cluster's classes exactly when it places it on the whole layout, on devices valid on both."""

from __future__ import annotations

import random
from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from testkit.gpu_objects import ready_card
from tests.real.allocator_diff import (
    ATTR,
    CLASS_SELECTORS,
    DEMAND_SELECTORS,
    IS_OURS,
    MODELS,
    Facts,
    _selector,
    ours,
)

NODE = "lossless"
PROFILES = ("1g.6gb", "1g.10gb", "2g.20gb", "3g.40gb", "4g.24gb", "7g.80gb")


def classes(rng: random.Random) -> list[dict[str, Any]]:
    """A random class set of a cluster: some of the differential's roles (never the one that
    accepts everything) and a class per some MIG profiles."""
    selectors = {role: CLASS_SELECTORS[role] for role in ("physical", "mig", "big")}
    selectors["even"] = DEMAND_SELECTORS["even"]
    for profile in rng.sample(PROFILES, rng.randint(0, 3)):
        selectors[f"p-{profile.replace('.', '-')}"] = (
            f'{IS_OURS} && {ATTR}.deviceType == "MIG" && {ATTR}.migProfile == "{profile}"'
        )
    chosen = rng.sample(sorted(selectors), rng.randint(1, 3))
    return [
        {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": selectors[name]}}]}}
        for name in chosen
    ]


SEEDS = range(30)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_filtered_layout_answers_every_claim_as_the_whole_one(seed: int) -> None:
    case(seed)


def test_the_cases_filter_and_place() -> None:
    """Not vacuous: the class sets leave devices out and the claims get devices."""
    found = [case(seed) for seed in SEEDS]
    assert sum(1 for whole, filtered, _ in found if filtered < whole) >= len(found) // 2
    assert sum(placed for _, _, placed in found) >= 2 * len(found)


def case(seed: int) -> tuple[int, int, int]:
    """(devices of the whole layout, of the filtered one, claims placed) of one seeded case."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible case, not a secret
    models = [rng.choice(MODELS) for _ in range(rng.randint(1, 3))]
    cards = [ready_card(NODE, f"0000:{0x10 + i * 8:02x}:00.0", model) for i, model in enumerate(models)]
    cluster_classes = classes(rng)
    whole = render(NODE, [card_offers(c, OfferPolicy()) for c in cards], 36, 1, None)
    policy = OfferPolicy(demand=demand_of(cluster_classes))
    filtered = render(NODE, [card_offers(c, policy) for c in cards], 36, 1, None)
    assert _count(filtered) <= _count(whole)
    facts = Facts.of(whole)
    allocated: dict[str, list[dict[str, Any]]] = {"whole": [], "filtered": []}
    placed: list[bool] = []
    for step in range(10):
        request: dict[str, Any] = {
            "deviceClassName": rng.choice(cluster_classes)["metadata"]["name"],
            "count": rng.choice((1, 1, 2)),
        }
        if rng.random() < 0.5 and facts.models:
            request["selectors"] = [{"cel": {"expression": _selector(rng, facts)}}]
        claim = {
            "metadata": {"name": f"c{step}", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": request}]}},
        }
        answers = {}
        for name, slices in (("whole", whole), ("filtered", filtered)):
            found = ours("1.36", NODE, slices, cluster_classes, allocated[name], claim)
            (answer,) = found.answers  # 1.36 reads a pool's slices in one order
            answers[name] = answer
        # Both fit or neither does. The devices may differ, equally valid: a card none of whose
        # MIG offers a class selects publishes no counters, so its whole card moves to the
        # devices slice, which 1.36 reads first. The filtered answer then holds on both sides.
        assert (answers["filtered"] is None) == (answers["whole"] is None), (seed, step, claim)
        placed.append(answers["whole"] is not None)
        if answers["filtered"] is not None:
            for results in allocated.values():
                results.extend(
                    {"request": "r", "driver": "gpu.deckhouse.io", "pool": f"gpus/{NODE}", "device": device}
                    for device in _devices(answers["filtered"])
                )
    return _count(whole), _count(filtered), sum(placed)


def _count(slices: list[dict[str, Any]]) -> int:
    return sum(len(s["spec"].get("devices", [])) for s in slices)


def _devices(answer: Any) -> list[str]:
    return [str(result[3]) for result in answer]
