# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Checks resource.k8s.io/v1 ResourceSlices (plain JSON dicts) against the rules of Kubernetes 1.34 to 1.37.

``validate_slice`` applies the rules the API server applies to one slice on create (KUBERNETES-FACTS.md
F1.1-F1.7), plus a few traps the allocator would hit later.
``validate_pool`` adds the rules across the slices of one pool, which no API server checks: the
allocator and the kubelet plugin's publisher refuse such a pool instead. ``minor`` is the
Kubernetes minor version; 1.36 and 1.37 keep the 1.35 rules (KUBERNETES-FACTS.md F10), and a minor newer than
the newest known one is treated as it (k8s_semantics/versions.py).

A Problem names a JSON path and the broken rule, e.g. ``spec.devices[3].name: "Gpu-1" is not a
DNS-1123 label``; an empty list means everything passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_capacity import integer_value, parse_quantity
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import show
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_spec import (
    check_slice,
    consumptions,
    counter_sets,
    indexed_maps,
    resolve,
)
from deckhouse_gpu.k8s_semantics.versions import known_minor

__all__ = ["Problem", "integer_value", "parse_quantity", "validate_pool", "validate_slice"]


def _effective_minor(minor: int) -> int:
    """The minor whose slice rules apply: 34, or 35 for 1.35 to 1.37 and newer (UnknownVersion,
    a ValueError, below 1.34)."""
    return min(known_minor(minor), 35)


def validate_slice(resource_slice: Mapping[str, Any], minor: int) -> list[Problem]:
    """Everything wrong with one slice as the API server of 1.``minor`` would create it."""
    out: list[Problem] = []
    check_slice(resource_slice, _effective_minor(minor), out)
    return out


def validate_pool(
    slices: Sequence[Mapping[str, Any]], minor: int, *, each_slice: bool = True
) -> list[Problem]:
    """Everything wrong with the slices of one pool, meant to be published together.

    Paths start with ``slices[i].``, the index into ``slices``. With ``each_slice`` (the default)
    every slice's own rules are included, so one call checks a whole publication.
    """
    minor = _effective_minor(minor)
    out: list[Problem] = []
    if each_slice:
        for index, resource_slice in enumerate(slices):
            out += [
                Problem(f"slices[{index}].{problem.path}", problem.rule)
                for problem in validate_slice(resource_slice, minor)
            ]
    specs = [_mapping(_mapping(resource_slice).get("spec")) for resource_slice in slices]
    _check_pool_identity(specs, out)
    _check_unique_names(slices, specs, out)
    if minor >= 35:
        # 1.35 moved counter sets into slices of their own; the references cross slices.
        _check_counter_references(specs, out)
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _check_pool_identity(specs: list[Mapping[str, Any]], out: list[Problem]) -> None:
    """One driver, pool name and generation; resourceSliceCount counts exactly these slices."""
    pools = [_mapping(spec.get("pool")) for spec in specs]
    generations = [pool.get("generation") or 0 for pool in pools]  # missing or null is 0
    newest = max((value for value in generations if type(value) is int), default=0)
    for index, (spec, pool) in enumerate(zip(specs, pools, strict=True)):
        path = f"slices[{index}].spec"
        if index and spec.get("driver") != specs[0].get("driver"):
            out.append(Problem(f"{path}.driver", f"{show(spec.get('driver'))} differs from slices[0]"))
        if index and pool.get("name") != pools[0].get("name"):
            out.append(Problem(f"{path}.pool.name", f"{show(pool.get('name'))} differs from slices[0]"))
        if type(generations[index]) is int and generations[index] != newest:
            out.append(
                Problem(
                    f"{path}.pool.generation",
                    f"{generations[index]} is older than the pool's {newest}; the allocator drops the slice",
                )
            )
        count = pool.get("resourceSliceCount")
        if type(count) is int and count != len(specs):
            out.append(
                Problem(
                    f"{path}.pool.resourceSliceCount", f"is {count}, but the pool has {len(specs)} slices"
                )
            )


def _check_unique_names(
    slices: Sequence[Mapping[str, Any]], specs: list[Mapping[str, Any]], out: list[Problem]
) -> None:
    """Slice names and device names across slices (duplicates inside one slice are validate_slice's)."""
    seen_slices: dict[str, int] = {}
    seen_devices: dict[str, tuple[int, int]] = {}
    for index, (resource_slice, spec) in enumerate(zip(slices, specs, strict=True)):
        name = _mapping(_mapping(resource_slice).get("metadata")).get("name")
        if isinstance(name, str) and name in seen_slices:
            out.append(
                Problem(
                    f"slices[{index}].metadata.name", f"{show(name)} duplicates slices[{seen_slices[name]}]"
                )
            )
        elif isinstance(name, str):
            seen_slices[name] = index
        for number, device in indexed_maps(spec.get("devices")):
            device_name = device.get("name")
            if not isinstance(device_name, str):
                continue
            first = seen_devices.setdefault(device_name, (index, number))
            if first[0] != index:
                out.append(
                    Problem(
                        f"slices[{index}].spec.devices[{number}].name",
                        f"{show(device_name)} duplicates slices[{first[0]}].spec.devices[{first[1]}].name",
                    )
                )


def _check_counter_references(specs: list[Mapping[str, Any]], out: list[Problem]) -> None:
    sets: dict[str, tuple[str, ...]] = {}
    first_slice: dict[str, tuple[int, str]] = {}
    for index, spec in enumerate(specs):
        for path, name, counters in counter_sets(spec):
            first = first_slice.setdefault(name, (index, path))
            if first[0] != index:
                out.append(
                    Problem(
                        f"slices[{index}].{path}.name",
                        f"{show(name)} duplicates slices[{first[0]}].{first[1]}.name in the pool",
                    )
                )
            sets.setdefault(name, counters)
    for index, spec in enumerate(specs):
        resolve(
            list(consumptions(spec)), sets, f"slices[{index}].", "in the pool's sharedCounters (1.35)", out
        )
