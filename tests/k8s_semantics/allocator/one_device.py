# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One device and one request, ready for a single rule: the world, a fresh pass and the device."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.gather import Pool
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Claim
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.support.allocation import DRIVER, World, claim_object, exactly, resource_slice


@dataclass
class Judged:
    world: World
    claim: Claim
    alternative: Alternative
    work: SearchPass
    pool: Pool
    device: Device

    @property
    def semantics(self) -> Semantics:
        return self.world.semantics


def judge(
    devices: Iterable[Mapping[str, Any]],
    *requests: Mapping[str, Any],
    name: str | None = None,
    semantics: Semantics | None = None,
    classes: Iterable[Mapping[str, Any]] = (),
    counters: Mapping[str, Mapping[str, str]] | None = None,
    in_use: Iterable[str] = (),
    shares: Mapping[str, Mapping[str, int]] | None = None,
    **devices_fields: Any,
) -> Judged:
    """``alternative`` is the first request's (default: one of class gpu); ``name`` picks the
    device (the first by default); ``in_use`` and ``shares`` are what earlier claims hold;
    ``devices_fields`` go to the claim's spec.devices (constraints)."""
    world = World([resource_slice("s", list(devices), counters=counters)], classes, semantics)
    for device_name in in_use:
        world.state.in_use.add((DRIVER, "p1", device_name))
    for device_name, amounts in (shares or {}).items():
        world.state.shares[(DRIVER, "p1", device_name)] = {k: Fraction(v) for k, v in amounts.items()}
    claim = world.claim(claim_object("c", *(requests or [exactly("r")]), **devices_fields))
    work = world.allocator.start([claim], Node("n1"), world.state)
    (pool,) = work.gathered.pools
    device = next(d for d in pool.candidates if name is None or d.name == name)
    return Judged(world, claim, claim.requests[0].alternatives[0], work, pool, device)
