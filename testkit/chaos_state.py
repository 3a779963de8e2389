# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a chaos run compares (testkit/chaos_world.py): the end state of the API objects that matter,
with what differs between any two runs (versions, UIDs, times) taken out, and where two differ."""

from __future__ import annotations

import re
from typing import Any

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube

_VOLATILE = {
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "managedFields",
    "generation",
    "lastTransitionTime",
}
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in sorted(value.items()) if k not in _VOLATILE}
    if isinstance(value, list):
        items = [normalise(v) for v in value]
        # Conditions are a map keyed by type: their order is the order of the writers' first writes.
        if items and all(isinstance(v, dict) and "type" in v for v in items):
            items.sort(key=lambda v: str(v["type"]))
        return items
    if isinstance(value, str) and _TIMESTAMP.match(value):
        return "<time>"
    return value


def snapshot(kube: MemoryKube) -> dict[str, Any]:
    """PhysicalGPUs, ResourceSlices and the claims (allocation, devices), normalised; Events aside."""
    claims = {}
    for claim in kube.list(RESOURCE_CLAIMS).items:
        state = claim.get("status") or {}
        claims[claim["metadata"]["name"]] = normalise(
            {"allocation": state.get("allocation"), "devices": state.get("devices")}
        )
    return {
        "physicalgpus": {o["metadata"]["name"]: normalise(o) for o in kube.list(PHYSICAL_GPUS).items},
        "resourceslices": sorted(
            (normalise(o) for o in kube.list(RESOURCE_SLICES).items), key=lambda o: str(o["metadata"])
        ),
        "claims": claims,
    }


def difference(got: Any, wanted: Any, where: str = "") -> str:
    """The first place where two snapshots differ, for the failure message."""
    if isinstance(got, dict) and isinstance(wanted, dict):
        for key in sorted(set(got) | set(wanted), key=str):
            if got.get(key) != wanted.get(key):
                return difference(got.get(key), wanted.get(key), f"{where}.{key}")
    if isinstance(got, list) and isinstance(wanted, list) and len(got) == len(wanted):
        for index, (a, b) in enumerate(zip(got, wanted, strict=True)):
            if a != b:
                return difference(a, b, f"{where}[{index}]")
    return f"{where or '<root>'}: {str(got)[:300]} != {str(wanted)[:300]}"
