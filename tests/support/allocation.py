# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Small ResourceSlices, DeviceClasses and claims for the allocator's tests (production CEL)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator, Outcome
from deckhouse_gpu.k8s_semantics.resources.claims import Claim, DeviceClass, parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

DRIVER = "gpu.deckhouse.io"
IS_GPU = f'device.attributes["{DRIVER}"].kind == "gpu"'


def device(
    name: str,
    *,
    kind: str = "gpu",
    attributes: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
    consumes: Mapping[str, Mapping[str, str]] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    multi: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "attributes": {"kind": {"string": kind}}}
    for key, value in (attributes or {}).items():
        typed = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        found["attributes"][key] = {typed: value}
    if capacity:
        found["capacity"] = {k: (v if isinstance(v, Mapping) else {"value": v}) for k, v in capacity.items()}
    if consumes:
        found["consumesCounters"] = [
            {"counterSet": s, "counters": {c: {"value": v} for c, v in counters.items()}}
            for s, counters in consumes.items()
        ]
    if taints:
        found["taints"] = list(taints)
    if multi:
        found["allowMultipleAllocations"] = True
    found.update(extra)
    return found


def resource_slice(
    name: str,
    devices: Iterable[Mapping[str, Any]] = (),
    *,
    node: str | None = "n1",
    pool: str = "p1",
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    counters: Mapping[str, Mapping[str, str]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
    }
    if node is not None:
        body["nodeName"] = node
    listed = list(devices)
    if listed:
        body["devices"] = listed
    if counters:
        body["sharedCounters"] = [
            {"name": s, "counters": {c: {"value": v} for c, v in values.items()}}
            for s, values in counters.items()
        ]
    body.update(spec)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def device_class(name: str, *expressions: str, config: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions or (IS_GPU,)]}
    if config:
        spec["config"] = list(config)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def exactly(name: str, device_class: str = "gpu", count: int | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class, **fields}
    if count is not None:
        body["count"] = count
    return {"name": name, "exactly": body}


def first_available(name: str, *subrequests: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subrequests)}


def claim_object(name: str, *requests: Mapping[str, Any], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": list(requests), **devices}},
    }


class World:
    """Slices, classes and what is allocated; allocates claims as the scheduler would."""

    def __init__(
        self,
        slices: Iterable[Mapping[str, Any]],
        classes: Iterable[Mapping[str, Any]] = (),
        semantics: Semantics | None = None,
        share_ids: Iterable[str] | None = None,
    ) -> None:
        self.semantics = semantics or Semantics()
        self.inventory = build_inventory(list(slices))
        self.classes: dict[str, DeviceClass] = parse_classes(list(classes) or [device_class("gpu")])
        ids = iter(share_ids) if share_ids is not None else None
        counter = iter(range(1, 10**6))
        self.allocator = Allocator(
            self.inventory,
            self.semantics,
            CelMatcher(consumable_capacity=self.semantics.consumable),
            new_share_id=(lambda: next(ids))
            if ids
            else lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
        )
        self.state = AllocatedState()

    def claim(self, raw: Mapping[str, Any]) -> Claim:
        return parse_claim(raw, self.classes, self.semantics)

    def allocate(
        self, *claims: Mapping[str, Any], node: str = "n1", labels: Mapping[str, str] | None = None
    ) -> Outcome:
        return self.allocator.allocate(
            [self.claim(c) for c in claims], Node(node, dict(labels or {})), self.state
        )

    def commit(self, outcome: Outcome) -> None:
        assert outcome.allocations is not None, outcome.error
        for allocation in outcome.allocations:
            for result in allocation["devices"]["results"]:
                self.state.add_result(result, self.semantics.consumable)

    def devices(
        self, *claims: Mapping[str, Any], node: str = "n1", commit: bool = True
    ) -> list[list[str]] | None:
        """The device names per claim, or None when the claims do not fit; committed by default."""
        outcome = self.allocate(*claims, node=node)
        assert outcome.error is None, outcome.error
        if outcome.allocations is None:
            return None
        if commit:
            self.commit(outcome)
        return [[r["device"] for r in a["devices"]["results"]] for a in outcome.allocations]
