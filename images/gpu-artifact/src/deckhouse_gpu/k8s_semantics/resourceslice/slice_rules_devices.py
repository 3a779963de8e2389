# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ResourceSlice rules for one device (spec.devices[i]); slice_rules.py runs them per device.

Sources: KUBERNETES-FACTS.md F1.1-F1.7, F10. ``minor`` is 34 or 35 (35 stands for 1.36, 1.37 and every later
release as well). 1.36 adds list-valued attributes behind an alpha gate (DRAListTypeAttributes, off
by default); the driver publishes none, and a value that is not exactly one of int, bool, string
and version is refused here on every version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_capacity import check_capacity, quantity_at
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import (
    as_list,
    as_map,
    check_dns_label,
    check_dns_subdomain,
    check_fields,
    check_label_key,
    check_label_value,
    check_node_selector,
    check_qualified_name,
    check_true,
    is_semver,
    show,
)

MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_VALUE_BYTES = 64  # string and version attribute values
MAX_BINDING_CONDITIONS = 4
MAX_COUNTERS_PER_DEVICE_134 = 32  # summed over the device's consumesCounters entries
MAX_CONSUMPTIONS_135 = 2
MAX_COUNTERS_PER_CONSUMPTION_135 = 32
_INT64 = 2**63

_DEVICE_FIELDS = frozenset(
    {"name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints"}
    | {"bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations"}
)
_ATTRIBUTE_KINDS = ("int", "bool", "string", "version")
_NODE_FIELDS = ("nodeName", "nodeSelector", "allNodes")


def max_taints(minor: int) -> int:
    return 4 if minor <= 34 else 16


def taint_effects(minor: int) -> tuple[str, ...]:
    return ("NoSchedule", "NoExecute") if minor <= 34 else ("None", "NoSchedule", "NoExecute")


def check_counters(value: Any, path: str, out: list[Problem]) -> Mapping[str, Any]:
    """A ``counters`` map (a counter set's or a consumption's): ≥1 entry, DNS-label names."""
    counters = as_map(value, path, out)
    if not counters:
        out.append(Problem(path, "must have at least one counter"))
    for name, counter in counters.items():
        counter_path = f"{path}[{name}]"
        check_dns_label(name, counter_path, out)
        counter_map = as_map(counter, counter_path, out)
        check_fields(counter_map, ("value",), counter_path, out)
        quantity_at(counter_map.get("value"), f"{counter_path}.value", out)
    return counters


def check_device(device: Any, path: str, minor: int, per_device_nodes: bool, out: list[Problem]) -> None:
    fields = as_map(device, path, out)
    check_fields(fields, _DEVICE_FIELDS, path, out)
    check_dns_label(fields.get("name"), f"{path}.name", out)
    attributes = as_map(fields.get("attributes"), f"{path}.attributes", out)
    capacities = as_map(fields.get("capacity"), f"{path}.capacity", out)
    if len(attributes) + len(capacities) > MAX_ATTRIBUTES_AND_CAPACITIES:
        out.append(
            Problem(
                path,
                f"has {len(attributes) + len(capacities)} attributes and capacities together, "
                f"more than {MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    for key, attribute in attributes.items():
        check_qualified_name(key, f"{path}.attributes[{key}]", out)
        _check_attribute(attribute, f"{path}.attributes[{key}]", out)
    for flag in ("allowMultipleAllocations", "bindsToNode"):
        if fields.get(flag) is not None and not isinstance(fields[flag], bool):
            out.append(Problem(f"{path}.{flag}", f"{show(fields[flag])} is not a boolean"))
    shared = fields.get("allowMultipleAllocations") is True
    for key, capacity in capacities.items():
        check_qualified_name(key, f"{path}.capacity[{key}]", out)
        check_capacity(capacity, f"{path}.capacity[{key}]", shared, out)
    _check_consumption(fields.get("consumesCounters"), f"{path}.consumesCounters", minor, out)
    _check_taints(fields.get("taints"), f"{path}.taints", minor, out)
    _check_binding_conditions(fields, path, out)
    _check_node_selection(fields, path, per_device_nodes, out)


def _check_attribute(value: Any, path: str, out: list[Problem]) -> None:
    attribute = as_map(value, path, out)
    check_fields(attribute, _ATTRIBUTE_KINDS, path, out)
    kinds = [kind for kind in _ATTRIBUTE_KINDS if attribute.get(kind) is not None]
    if len(kinds) != 1:
        out.append(Problem(path, f"must have exactly one of int, bool, string, version (has {len(kinds)})"))
    number, flag = attribute.get("int"), attribute.get("bool")
    if number is not None and (type(number) is not int or not -_INT64 <= number < _INT64):
        out.append(Problem(f"{path}.int", f"{show(number)} is not a 64-bit integer"))
    if flag is not None and not isinstance(flag, bool):
        out.append(Problem(f"{path}.bool", f"{show(flag)} is not a boolean"))
    for kind in ("string", "version"):
        text = attribute.get(kind)
        if text is None:
            continue
        if not isinstance(text, str):
            out.append(Problem(f"{path}.{kind}", f"{show(text)} is not a string"))
            continue
        if len(text.encode()) > MAX_VALUE_BYTES:
            out.append(
                Problem(f"{path}.{kind}", f"is {len(text.encode())} bytes, more than {MAX_VALUE_BYTES}")
            )
        if kind == "version" and not is_semver(text):
            out.append(Problem(f"{path}.version", f"{show(text)} is not a semver 2.0.0 version"))


def _check_consumption(value: Any, path: str, minor: int, out: list[Problem]) -> None:
    entries = as_list(value, path, out)
    if minor >= 35 and len(entries) > MAX_CONSUMPTIONS_135:
        out.append(Problem(path, f"has {len(entries)} entries, more than {MAX_CONSUMPTIONS_135} (1.35)"))
    first_entry: dict[str, int] = {}
    total = 0
    for index, entry in enumerate(entries):
        entry_path = f"{path}[{index}]"
        fields = as_map(entry, entry_path, out)
        check_fields(fields, ("counterSet", "counters"), entry_path, out)
        name = fields.get("counterSet")
        check_dns_label(name, f"{entry_path}.counterSet", out)
        if isinstance(name, str) and name in first_entry:
            out.append(
                Problem(f"{entry_path}.counterSet", f"duplicates consumesCounters[{first_entry[name]}]")
            )
        elif isinstance(name, str):
            first_entry[name] = index
        counters = check_counters(fields.get("counters"), f"{entry_path}.counters", out)
        total += len(counters)
        if minor >= 35 and len(counters) > MAX_COUNTERS_PER_CONSUMPTION_135:
            out.append(
                Problem(
                    f"{entry_path}.counters",
                    f"has {len(counters)} counters, more than {MAX_COUNTERS_PER_CONSUMPTION_135} (1.35)",
                )
            )
    if minor <= 34 and total > MAX_COUNTERS_PER_DEVICE_134:
        out.append(
            Problem(
                path,
                f"consumes {total} counters in all entries, more than {MAX_COUNTERS_PER_DEVICE_134} (1.34)",
            )
        )


def _check_taints(value: Any, path: str, minor: int, out: list[Problem]) -> None:
    taints = as_list(value, path, out)
    if len(taints) > max_taints(minor):
        out.append(Problem(path, f"has {len(taints)} taints, more than {max_taints(minor)} (1.{minor})"))
    for index, taint in enumerate(taints):
        taint_path = f"{path}[{index}]"
        fields = as_map(taint, taint_path, out)
        check_fields(fields, ("key", "value", "effect", "timeAdded"), taint_path, out)
        check_label_key(fields.get("key"), f"{taint_path}.key", out)
        if fields.get("value") is not None:
            check_label_value(fields["value"], f"{taint_path}.value", out)
        effect = fields.get("effect")
        if effect is None:
            out.append(Problem(f"{taint_path}.effect", "required"))
        elif effect not in taint_effects(minor):
            allowed = ", ".join(taint_effects(minor))
            out.append(Problem(f"{taint_path}.effect", f"{show(effect)} is not one of {allowed} (1.{minor})"))


def _check_binding_conditions(device: Mapping[str, Any], path: str, out: list[Problem]) -> None:
    lists: dict[str, list[Any]] = {}
    for field in ("bindingConditions", "bindingFailureConditions"):
        field_path = f"{path}.{field}"
        items = lists[field] = as_list(device.get(field), field_path, out)
        if len(items) > MAX_BINDING_CONDITIONS:
            out.append(Problem(field_path, f"has {len(items)} entries, more than {MAX_BINDING_CONDITIONS}"))
        for index, item in enumerate(items):
            check_label_key(item, f"{field_path}[{index}]", out)
            if item in items[:index]:
                out.append(Problem(f"{field_path}[{index}]", f"{show(item)} is listed twice"))
    conditions, failures = lists["bindingConditions"], lists["bindingFailureConditions"]
    if bool(conditions) != bool(failures):
        missing = "bindingFailureConditions" if conditions else "bindingConditions"
        out.append(Problem(f"{path}.{missing}", "required: set both binding condition lists or neither"))
    for index, item in enumerate(failures):
        if item in conditions:
            out.append(
                Problem(
                    f"{path}.bindingFailureConditions[{index}]", f"{show(item)} is in bindingConditions too"
                )
            )


def _check_node_selection(device: Mapping[str, Any], path: str, per_device: bool, out: list[Problem]) -> None:
    chosen = [field for field in _NODE_FIELDS if device.get(field) is not None]
    if not per_device:
        for field in chosen:
            out.append(Problem(f"{path}.{field}", "only allowed when spec.perDeviceNodeSelection is true"))
        return
    if len(chosen) != 1:
        out.append(
            Problem(
                path,
                "must set exactly one of nodeName, nodeSelector, allNodes when spec.perDeviceNodeSelection "
                f"is true (has {len(chosen)})",
            )
        )
    if "nodeName" in chosen:
        check_dns_subdomain(device["nodeName"], f"{path}.nodeName", out)
    if "nodeSelector" in chosen:
        # Validation allows several terms here; the allocator refuses them at allocation time.
        terms = check_node_selector(device["nodeSelector"], f"{path}.nodeSelector", out)
        if len(terms) > 1:
            out.append(
                Problem(
                    f"{path}.nodeSelector.nodeSelectorTerms",
                    "has more than one term: the API server accepts it, the allocator fails on it",
                )
            )
    if "allNodes" in chosen:
        check_true(device["allNodes"], f"{path}.allNodes", out)
