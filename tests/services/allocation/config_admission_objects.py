# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The objects the admission tests of gpu.deckhouse.io opaque config (tests/services/
test_config_admission*.py) review: our configs and another driver's, DeviceClasses, ResourceClaims
and ResourceClaimTemplates carrying them, the AdmissionReview request around them, and the
denial's message.
"""

from __future__ import annotations

import copy
from typing import Any

from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION

UID = "6f1e3a52-8d5c-4d0b-9a59-2b2f0c6a1e11"
MPS = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
TIME_SLICING = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "TimeSlicing"}}
MIG_MPS = {"apiVersion": LEGACY_API_VERSION, "kind": "MIGConfig", "sharing": {"strategy": "MPS"}}
VFIO = {"apiVersion": LEGACY_API_VERSION, "kind": "VFIOConfig"}
PERCENTAGE = "sharing.mps.defaultActiveThreadPercentage"
TOO_HIGH = {**MPS, "sharing": {"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 150}}}
NVIDIA = {
    "apiVersion": "resource.nvidia.com/v1beta1",
    "kind": "GpuConfig",
    "sharing": {"strategy": "Nonsense"},
}


def ours(parameters: Any = MPS, requests: list[Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters}}
    if requests is not None:
        entry["requests"] = requests
    return entry


def theirs(parameters: Any = NVIDIA) -> dict[str, Any]:
    return {"opaque": {"driver": "gpu.nvidia.com", "parameters": parameters}}


def device_class(*config: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.deckhouse.io"'}}]}
    if config:
        spec["config"] = list(config)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "c"},
        "spec": spec,
    }


REQUESTS = [
    {"name": "gpu", "exactly": {"deviceClassName": "gpu-shared"}},
    {
        "name": "any",
        "firstAvailable": [{"name": "a100", "deviceClassName": "a"}, {"name": "a30", "deviceClassName": "b"}],
    },
]


def claim_devices(*config: Any) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": copy.deepcopy(REQUESTS)}
    if config:
        devices["config"] = list(config)
    return devices


def claim(*config: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "spec": {"devices": claim_devices(*config)},
    }


def template(*config: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "spec": {"spec": {"devices": claim_devices(*config)}},
    }


MAKERS = {"DeviceClass": device_class, "ResourceClaim": claim, "ResourceClaimTemplate": template}
PREFIX = {"DeviceClass": "spec.config", "ResourceClaim": "spec.devices.config"}
PREFIX["ResourceClaimTemplate"] = "spec.spec.devices.config"


def request(obj: Any, operation: str = "CREATE", old: Any = None, kind: str | None = None) -> dict[str, Any]:
    kind = kind or (obj or old)["kind"]
    resource = {"DeviceClass": "deviceclasses", "ResourceClaim": "resourceclaims"}.get(
        kind, "resourceclaimtemplates"
    )
    return {
        "uid": UID,
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": kind},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": resource},
        "operation": operation,
        "object": obj,
        "oldObject": old,
    }


def denial(response: dict[str, Any]) -> str:
    assert response["uid"] == UID
    assert response["allowed"] is False, response
    assert response["status"]["code"] == 422
    assert response["status"]["reason"] == "Invalid"
    message: str = response["status"]["message"]
    return message
