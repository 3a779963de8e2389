# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Known-valid ResourceSlices for the slice_rules tests: a 1.34 slice and a 1.35 pool.

Every builder returns a fresh dict, so a test can break exactly one rule in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import Problem, validate_slice

DRIVER = "gpu.deckhouse.io"
POOL = "gpus/node-1"
SET = "card-0000-02-00-0"


def counter_set(name: str = SET) -> dict[str, Any]:
    return {"name": name, "counters": {"memory": {"value": "24Gi"}, "multiprocessors": {"value": "56"}}}


def consumes(memory: str, multiprocessors: str, set_name: str = SET) -> list[dict[str, Any]]:
    counters = {"memory": {"value": memory}, "multiprocessors": {"value": multiprocessors}}
    return [{"counterSet": set_name, "counters": counters}]


def full_card(name: str = "gpu-0") -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "model": {"string": "a30"},
            "index": {"int": 0},
            "mig": {"bool": False},
            "driverVersion": {"version": "550.54.15"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": {"memory": {"value": "24Gi"}},
        "consumesCounters": consumes("24Gi", "56"),
    }


def mig(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"profile": {"string": "1g.6gb"}, "gpu.deckhouse.io/mig": {"bool": True}},
        "capacity": {"memory": {"value": "6Gi"}},
        "consumesCounters": consumes("6Gi", "14"),
    }


def shared_card(name: str = "gpu-1-shared") -> dict[str, Any]:
    """Consumable capacity: a range policy and a discrete one."""
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "attributes": {"model": {"string": "a30"}},
        "capacity": {
            "sharePercent": {
                "value": "100",
                "requestPolicy": {"default": "100", "validRange": {"min": "1", "max": "100", "step": "1"}},
            },
            "memory": {
                "value": "24Gi",
                "requestPolicy": {"default": "6Gi", "validValues": ["6Gi", "12Gi", "24Gi"]},
            },
        },
    }


def devices() -> list[dict[str, Any]]:
    return [full_card(), mig("gpu-0-mig-1g-6gb-0"), mig("gpu-0-mig-1g-6gb-1"), shared_card()]


def resource_slice(name: str, count: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": POOL, "generation": 1, "resourceSliceCount": count},
            "nodeName": "node-1",
        }
        | spec,
    }


def slice_134() -> dict[str, Any]:
    """1.34 layout: the counter set and the devices that consume it in one slice."""
    return resource_slice("node-1-gpu-deckhouse-io-card-0", sharedCounters=[counter_set()], devices=devices())


def counters_slice_135(count: int = 2) -> dict[str, Any]:
    return resource_slice("node-1-gpu-deckhouse-io-counters-0", count, sharedCounters=[counter_set()])


def devices_slice_135(count: int = 2) -> dict[str, Any]:
    return resource_slice("node-1-gpu-deckhouse-io-partitionable-0", count, devices=devices())


def pool_135() -> list[dict[str, Any]]:
    """1.35 layout: a counters-only slice and a devices slice referring to it across slices."""
    return [counters_slice_135(), devices_slice_135()]


def plain_devices(count: int) -> list[dict[str, Any]]:
    return [{"name": f"gpu-{index}"} for index in range(count)]


D = "spec.devices[0]"


def check_first_device(minor: int, mutate: Callable[[dict[str, Any]], object]) -> list[Problem]:
    """Apply ``mutate`` to the first device (a full card consuming counters) of a valid slice."""
    resource_slice = slice_134() if minor == 34 else devices_slice_135()
    mutate(resource_slice["spec"]["devices"][0])
    return validate_slice(resource_slice, minor)


def only(problems: list[Problem]) -> Problem:
    """The single problem; the test broke one rule, so anything more is a false alarm."""
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def assert_only(problems: list[Problem], path: str, fragment: str) -> None:
    problem = only(problems)
    assert problem.path == path, str(problem)
    assert fragment in problem.rule, str(problem)
