# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Random ResourceSlices near every limit that ``k8s_semantics/resourceslice/slice_rules*`` knows, for the
differential test against the real API server (tests/real/test_slice_rules_vs_server.py).

A case starts from a small valid slice of one layout (plain devices, the 1.34 layout with counters
and devices in one slice, the 1.35 devices slice or counters-only slice) and moves a few
"dimensions" to values on either side of a limit: 64/65 and 128/129 devices, 32/33 attributes,
63/64-character names, 64/65-byte values, 4/5 and 16/17 taints, 8/9 counter sets, 32/33 counters,
10/11 valid values, 4/5 binding conditions, 253/254-character pool names, odd quantities. Most
limits differ between 1.34 and 1.35, so the same case lands on different sides per version.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

LAYOUTS = ("plain", "1.34", "1.35-devices", "1.35-counters")

Slice = dict[str, Any]


def _counters(count: int) -> dict[str, Any]:
    return {f"c-{index}": {"value": "1"} for index in range(count)}


def _device(index: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {"model": {"string": "h100"}, "index": {"int": index}},
        "capacity": {"memory": {"value": "80Gi"}},
    }


def base(layout: str) -> Slice:
    spec: dict[str, Any] = {
        "driver": "gpu.deckhouse.io",
        "pool": {"name": "gpus/node-x", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-x",
    }
    if layout != "1.35-counters":
        spec["devices"] = [_device(0)]
    if layout in ("1.34", "1.35-counters"):
        spec["sharedCounters"] = [{"name": "card-0", "counters": _counters(2)}]
    if layout in ("1.34", "1.35-devices"):
        spec["devices"][0]["consumesCounters"] = [{"counterSet": "card-0", "counters": _counters(2)}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "x"},
        "spec": spec,
    }


def _devices(resource_slice: Slice) -> list[dict[str, Any]]:
    return list(resource_slice["spec"].get("devices") or [])


def _first(resource_slice: Slice) -> dict[str, Any] | None:
    devices = _devices(resource_slice)
    return devices[0] if devices else None


# Each dimension: (values to choose from, how a value changes the slice). A dimension that does
# not apply to a layout (taints on a counters-only slice) leaves it unchanged.


def _device_count(resource_slice: Slice, count: int) -> None:
    template = _first(resource_slice)
    if template is None:
        return
    devices = []
    for index in range(count):
        device = copy.deepcopy(template)
        device["name"] = f"gpu-{index}"
        device["attributes"]["index"] = {"int": index}
        devices.append(device)
    resource_slice["spec"]["devices"] = devices


def _attribute_count(resource_slice: Slice, count: int) -> None:
    device = _first(resource_slice)
    if device is not None:
        # One capacity (memory) is already there: attributes and capacities count together.
        device["attributes"] = {f"attr-{index}": {"int": index} for index in range(count - 1)}


def _device_name(resource_slice: Slice, name: str) -> None:
    device = _first(resource_slice)
    if device is not None:
        device["name"] = name


def _attribute_key(resource_slice: Slice, key: str) -> None:
    device = _first(resource_slice)
    if device is not None:
        device["attributes"][key] = {"bool": True}


def _attribute_value(resource_slice: Slice, value: Mapping[str, Any]) -> None:
    device = _first(resource_slice)
    if device is not None:
        device["attributes"]["value"] = dict(value)


def _taints(resource_slice: Slice, spec: tuple[int, str]) -> None:
    count, effect = spec
    device = _first(resource_slice)
    if device is not None:
        device["taints"] = [
            {"key": f"gpu.deckhouse.io/t-{index}", "value": "x", "effect": effect} for index in range(count)
        ]


def _counter_sets(resource_slice: Slice, spec: tuple[int, int]) -> None:
    sets, per_set = spec
    if "sharedCounters" in resource_slice["spec"]:
        resource_slice["spec"]["sharedCounters"] = [
            {"name": f"card-{index}", "counters": _counters(per_set)} for index in range(sets)
        ]


def _consumption(resource_slice: Slice, spec: tuple[int, int]) -> None:
    """``entries`` consumesCounters entries of ``per_entry`` counters on every device."""
    entries, per_entry = spec
    spec_map = resource_slice["spec"]
    if not any("consumesCounters" in device for device in _devices(resource_slice)):
        return
    if "sharedCounters" in spec_map:  # the 1.34 layout: every reference resolves inside the slice
        spec_map["sharedCounters"] = [
            {"name": f"card-{index}", "counters": _counters(per_entry)} for index in range(entries)
        ]
    for device in _devices(resource_slice):
        device["consumesCounters"] = [
            {"counterSet": f"card-{index}", "counters": _counters(per_entry)} for index in range(entries)
        ]


def _valid_values(resource_slice: Slice, spec: tuple[int, bool]) -> None:
    count, multiple = spec
    device = _first(resource_slice)
    if device is None:
        return
    values = [f"{index + 1}Gi" for index in range(count)]
    device["capacity"]["memory"] = {
        "value": f"{count}Gi",
        "requestPolicy": {"default": values[0], "validValues": values},
    }
    if multiple:
        device["allowMultipleAllocations"] = True


def _binding_conditions(resource_slice: Slice, count: int) -> None:
    device = _first(resource_slice)
    if device is not None:
        device["bindsToNode"] = True
        device["bindingConditions"] = [f"gpu.deckhouse.io/ready-{index}" for index in range(count)]
        device["bindingFailureConditions"] = ["gpu.deckhouse.io/failed"]


def _pool_name(resource_slice: Slice, name: str) -> None:
    resource_slice["spec"]["pool"]["name"] = name


def _quantity(resource_slice: Slice, value: str) -> None:
    device = _first(resource_slice)
    if device is not None:
        device["capacity"]["memory"] = {"value": value}


_LABEL = "a" * 63
DIMENSIONS: dict[str, tuple[list[Any], Callable[[Slice, Any], None]]] = {
    "devices": ([0, 1, 64, 65, 128, 129], _device_count),
    "attributes": ([31, 32, 33], _attribute_count),
    "device name": ([_LABEL, _LABEL + "a", "Gpu-0", "gpu_0", "gpu-0-"], _device_name),
    "attribute key": (
        [
            _LABEL,
            _LABEL + "a",
            f"gpu.deckhouse.io/{_LABEL}",
            f"gpu.deckhouse.io/{_LABEL}a",
            f"{_LABEL}.{_LABEL}.{_LABEL}.{'a' * 61}/x",
            f"{_LABEL}.{_LABEL}.{_LABEL}.{'a' * 62}/x",
            "Model",
            "gpu.Deckhouse.io/x",
            "a/b/c",
        ],
        _attribute_key,
    ),
    "attribute value": (
        [
            {"string": "x" * 64},
            {"string": "x" * 65},
            {"string": "я" * 32},
            {"string": "я" * 33},
            {"version": "550.54.15"},
            {"version": "v1.2.3"},
            {"version": "1.2"},
            {"int": 2**63 - 1},
            {"bool": False},
            {"string": "x", "int": 1},
            {},
        ],
        _attribute_value,
    ),
    "taints": (
        [
            (4, "NoSchedule"),
            (5, "NoSchedule"),
            (16, "NoExecute"),
            (17, "NoSchedule"),
            (1, "None"),
            (1, "Bogus"),
        ],
        _taints,
    ),
    "counter sets": ([(8, 4), (9, 1), (1, 32), (1, 33), (2, 16), (2, 17)], _counter_sets),
    "consumption": ([(1, 32), (1, 33), (2, 16), (2, 17), (3, 1), (2, 1)], _consumption),
    "valid values": ([(10, True), (11, True), (2, False)], _valid_values),
    "binding conditions": ([4, 5], _binding_conditions),
    "pool name": (["p" * 253, "p" * 254, "gpus/" + _LABEL, "gpus//x", "Gpus/x"], _pool_name),
    "quantity": (["1", "24Gi", "1.5", "1e3", "100m", "-1", "1Ki", "0.1Gi"], _quantity),
}


@st.composite
def near_limit_slices(draw: st.DrawFn) -> tuple[str, dict[str, Any], Slice]:
    """(layout, the chosen values by dimension, the slice) for one case."""
    layout = draw(st.sampled_from(LAYOUTS))
    names = draw(st.lists(st.sampled_from(sorted(DIMENSIONS)), min_size=1, max_size=3, unique=True))
    resource_slice = base(layout)
    chosen: dict[str, Any] = {}
    # "devices" goes last so that the other changes of the first device are copied to all of them.
    for name in sorted(names, key=lambda dimension: dimension == "devices"):
        values, change = DIMENSIONS[name]
        value = draw(st.sampled_from(values))
        chosen[name] = value
        change(resource_slice, value)
    return layout, chosen, resource_slice
