# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device, engine and ``evaluate`` the DRA CEL engine tests share (tests/k8s_semantics/cel/test_*.py).

One device of the driver ``gpu.example.com`` with attributes of every kind, qualified and
unqualified names and two capacities; ``A`` and ``C`` spell its attribute and capacity maps.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.k8s_semantics.cel import DeviceView, SelectorEngine, device_view

DRIVER = "gpu.example.com"
DEVICE: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "A30"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "580.82.7"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:3b"},
        "gpu.example.com/uuid": {"string": "GPU-1"},
    },
    "capacity": {"memory": {"value": "40Gi"}, "example.com/bandwidth": {"value": "1500m"}},
    "allowMultipleAllocations": True,
}
ENGINE = SelectorEngine()
VIEW = device_view(DRIVER, DEVICE)
A = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'


def evaluate(expression: str, view: DeviceView = VIEW, engine: SelectorEngine = ENGINE) -> bool:
    return engine.compile(expression).matches(view)
