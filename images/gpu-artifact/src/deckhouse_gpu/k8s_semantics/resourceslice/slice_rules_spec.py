# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The rules of one whole ResourceSlice: metadata, pool, node selection, counter sets, device limits.

slice_rules.validate_slice runs them; the per-device rules are in slice_rules_devices.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_devices import check_counters, check_device
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import (
    as_list,
    as_map,
    check_dns_label,
    check_dns_subdomain,
    check_driver_name,
    check_fields,
    check_node_selector,
    check_object_name,
    check_string,
    check_true,
    is_dns_subdomain,
    show,
)

API_VERSION = "resource.k8s.io/v1"
KIND = "ResourceSlice"
MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS_135 = 64
MAX_SHARED_COUNTERS_134 = 32  # summed over all counter sets of the slice
MAX_CONSUMED_COUNTERS_PER_SLICE_134 = 1024  # summed over all devices' consumesCounters
MAX_COUNTER_SETS_135 = 8
MAX_COUNTERS_PER_SET_135 = 32
MAX_POOL_NAME = 253
_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_SPEC_FIELDS = ("driver", "pool", *_NODE_SELECTION, "devices", "sharedCounters")
_INT64 = 2**63

# (JSON path, counter set name, counter names) as read from a slice, malformed parts skipped.
Counters = tuple[str, str, tuple[str, ...]]


def check_slice(resource_slice: Any, minor: int, out: list[Problem]) -> None:
    """Every rule for one slice; ``minor`` is 34 or 35 (35 for 1.35 to 1.37 and newer)."""
    top = as_map(resource_slice, "(slice)", out)
    check_fields(top, ("apiVersion", "kind", "metadata", "spec"), "", out)
    if top.get("apiVersion") != API_VERSION:
        out.append(Problem("apiVersion", f"{show(top.get('apiVersion'))} must be {API_VERSION}"))
    if top.get("kind") != KIND:
        out.append(Problem("kind", f"{show(top.get('kind'))} must be {KIND}"))
    check_object_name(as_map(top.get("metadata"), "metadata", out), out)
    if top.get("spec") is None:
        out.append(Problem("spec", "required"))
        return
    spec = as_map(top.get("spec"), "spec", out)
    check_fields(spec, _SPEC_FIELDS, "spec", out)
    check_driver_name(spec.get("driver"), "spec.driver", out)
    _check_pool(spec.get("pool"), out)
    _check_node_selection(spec, out)
    _check_shared_counters(spec, minor, out)
    devices = as_list(spec.get("devices"), "spec.devices", out)
    per_device_nodes = spec.get("perDeviceNodeSelection") is True
    first_index: dict[str, int] = {}
    for index, device in enumerate(devices):
        path = f"spec.devices[{index}]"
        check_device(device, path, minor, per_device_nodes, out)
        name = device.get("name") if isinstance(device, Mapping) else None
        if isinstance(name, str) and name in first_index:
            out.append(
                Problem(f"{path}.name", f"{show(name)} duplicates spec.devices[{first_index[name]}].name")
            )
        elif isinstance(name, str):
            first_index[name] = index
    _check_device_limits(spec, devices, minor, out)


def _check_pool(value: Any, out: list[Problem]) -> None:
    if value is None:
        out.append(Problem("spec.pool", "required"))
        return
    pool = as_map(value, "spec.pool", out)
    check_fields(pool, ("name", "generation", "resourceSliceCount"), "spec.pool", out)
    name = check_string(pool.get("name"), "spec.pool.name", out)
    if name == "":
        out.append(Problem("spec.pool.name", "must not be empty"))
    elif name is not None:
        if len(name) > MAX_POOL_NAME:
            out.append(Problem("spec.pool.name", f"is {len(name)} characters, more than {MAX_POOL_NAME}"))
        for number, segment in enumerate(name.split("/"), start=1):
            if not is_dns_subdomain(segment):
                out.append(
                    Problem(
                        "spec.pool.name",
                        f"{show(name)}: segment {number} {show(segment)} is not a DNS-1123 subdomain",
                    )
                )
    # A missing or null number reads as 0 on the server: fine for the generation, not for the count.
    generation, count = _number(pool.get("generation")), _number(pool.get("resourceSliceCount"))
    if type(generation) is not int or not 0 <= generation < _INT64:
        out.append(Problem("spec.pool.generation", f"{show(generation)} is not a 64-bit integer ≥ 0"))
    if type(count) is not int or not 0 < count < _INT64:
        out.append(Problem("spec.pool.resourceSliceCount", f"{show(count)} is not a 64-bit integer > 0"))


def _number(value: Any) -> Any:
    return 0 if value is None else value


def _check_node_selection(spec: Mapping[str, Any], out: list[Problem]) -> None:
    chosen = [field for field in _NODE_SELECTION if spec.get(field) is not None]
    if len(chosen) != 1:
        listed = ", ".join(chosen) or "none"
        out.append(
            Problem("spec", f"exactly one of {', '.join(_NODE_SELECTION)} must be set (set: {listed})")
        )
    if "nodeName" in chosen:
        check_dns_subdomain(spec["nodeName"], "spec.nodeName", out)
    if (
        "nodeSelector" in chosen
        and len(check_node_selector(spec["nodeSelector"], "spec.nodeSelector", out)) > 1
    ):
        out.append(Problem("spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"))
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if flag in chosen:
            check_true(spec[flag], f"spec.{flag}", out)


def _check_shared_counters(spec: Mapping[str, Any], minor: int, out: list[Problem]) -> None:
    sets = as_list(spec.get("sharedCounters"), "spec.sharedCounters", out)
    if minor >= 35 and len(sets) > MAX_COUNTER_SETS_135:
        out.append(
            Problem(
                "spec.sharedCounters",
                f"has {len(sets)} counter sets, more than {MAX_COUNTER_SETS_135} (1.35)",
            )
        )
    first_index: dict[str, int] = {}
    total = 0
    for index, counter_set in enumerate(sets):
        path = f"spec.sharedCounters[{index}]"
        fields = as_map(counter_set, path, out)
        check_fields(fields, ("name", "counters"), path, out)
        name = fields.get("name")
        check_dns_label(name, f"{path}.name", out)
        if isinstance(name, str) and name in first_index:
            out.append(
                Problem(
                    f"{path}.name", f"{show(name)} duplicates spec.sharedCounters[{first_index[name]}].name"
                )
            )
        elif isinstance(name, str):
            first_index[name] = index
        counters = check_counters(fields.get("counters"), f"{path}.counters", out)
        total += len(counters)
        if minor >= 35 and len(counters) > MAX_COUNTERS_PER_SET_135:
            out.append(
                Problem(
                    f"{path}.counters",
                    f"has {len(counters)} counters, more than {MAX_COUNTERS_PER_SET_135} (1.35)",
                )
            )
    if minor <= 34 and total > MAX_SHARED_COUNTERS_134:
        out.append(
            Problem(
                "spec.sharedCounters",
                f"has {total} counters in all sets, more than {MAX_SHARED_COUNTERS_134} (1.34)",
            )
        )


def _check_device_limits(spec: Mapping[str, Any], devices: list[Any], minor: int, out: list[Problem]) -> None:
    if len(devices) > MAX_DEVICES:
        out.append(Problem("spec.devices", f"has {len(devices)} devices, more than {MAX_DEVICES}"))
    if minor >= 35:
        # 1.35 tests "both non-nil": an empty devices list counts as set, JSON null does not.
        if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
            out.append(Problem("spec", "only one of sharedCounters or devices may be set (1.35)"))
        advanced = any(
            isinstance(device, Mapping) and (device.get("taints") or device.get("consumesCounters"))
            for device in devices
        )
        if advanced and len(devices) > MAX_DEVICES_WITH_TAINTS_OR_COUNTERS_135:
            out.append(
                Problem(
                    "spec.devices",
                    f"has {len(devices)} devices, more than {MAX_DEVICES_WITH_TAINTS_OR_COUNTERS_135} "
                    "while a device has taints or consumesCounters (1.35)",
                )
            )
        return
    used = list(consumptions(spec))
    total = sum(len(counters) for _, _, counters in used)
    if total > MAX_CONSUMED_COUNTERS_PER_SLICE_134:
        out.append(
            Problem(
                "spec.devices",
                f"consume {total} counters in all, more than {MAX_CONSUMED_COUNTERS_PER_SLICE_134} (1.34)",
            )
        )
    sets = {name: counters for _, name, counters in counter_sets(spec)}
    resolve(used, sets, "", "in this slice's sharedCounters (1.34)", out)


def resolve(
    used: list[Counters], sets: Mapping[str, tuple[str, ...]], prefix: str, where: str, out: list[Problem]
) -> None:
    """Every consumed counter set and counter must exist in ``sets``."""
    for path, set_name, counters in used:
        if set_name not in sets:
            out.append(
                Problem(f"{prefix}{path}.counterSet", f"{show(set_name)} must name a counter set {where}")
            )
            continue
        for counter in counters:
            if counter not in sets[set_name]:
                out.append(
                    Problem(
                        f"{prefix}{path}.counters[{counter}]",
                        f"must name a counter of counter set {show(set_name)} {where}",
                    )
                )


def indexed_maps(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The objects of a JSON array with their indexes; anything malformed is someone else's problem."""
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, Mapping):
            yield index, item


def _names(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, Mapping) else ()


def counter_sets(spec: Mapping[str, Any]) -> Iterator[Counters]:
    for index, counter_set in indexed_maps(spec.get("sharedCounters")):
        if isinstance(counter_set.get("name"), str):
            yield f"spec.sharedCounters[{index}]", counter_set["name"], _names(counter_set.get("counters"))


def consumptions(spec: Mapping[str, Any]) -> Iterator[Counters]:
    for index, device in indexed_maps(spec.get("devices")):
        for number, entry in indexed_maps(device.get("consumesCounters")):
            if isinstance(entry.get("counterSet"), str):
                path = f"spec.devices[{index}].consumesCounters[{number}]"
                yield path, entry["counterSet"], _names(entry.get("counters"))
