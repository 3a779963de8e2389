# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The opaque config of gpu.deckhouse.io: what decodes to what in both spellings (canonical
resource.gpu.deckhouse.io/v1alpha1 and legacy gpu.deckhouse.io/v1alpha1), the canonical form it
encodes to, and how its errors and configs behave. Every rule with its exact message is in
test_opaque_config_invalid.py."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MPS
from deckhouse_gpu.domain.config.opaque_config import ConfigError, Problem, decode, encode
from deckhouse_gpu.domain.config.opaque_types import (
    API_VERSION,
    LEGACY_API_VERSION,
    GPUConfig,
    MIGConfig,
    VFIOConfig,
    device_type,
)
from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval, TimeSlicing
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from tests.domain.config.opaque_config_params import gpu, mig, mps, respell

VALID: list[tuple[str, Any, Any]] = [
    ("whole card, nothing set", gpu(), GPUConfig()),
    ("null is left out", {**gpu(), "sharing": None}, GPUConfig()),
    ("time-slicing, default interval", gpu({"strategy": "TimeSlicing"}), GPUConfig(TimeSlicing())),
    *[
        (
            f"time-slicing {interval}",
            gpu({"strategy": "TimeSlicing", "timeSlicing": {"interval": interval}}),
            GPUConfig(TimeSlicing(TimeSliceInterval(interval))),
        )
        for interval in ("Default", "Short", "Medium", "Long")
    ],
    (
        "time-slicing, empty settings",
        gpu({"strategy": "TimeSlicing", "timeSlicing": {}}),
        GPUConfig(TimeSlicing()),
    ),
    ("MPS without limits", gpu({"strategy": "MPS"}), GPUConfig(MPS())),
    ("MPS, empty limits", gpu(mps()), GPUConfig(MPS())),
    ("MPS, percentage 1", gpu(mps(defaultActiveThreadPercentage=1)), GPUConfig(MPS(1))),
    ("MPS, percentage 100", gpu(mps(defaultActiveThreadPercentage=100)), GPUConfig(MPS(100))),
    (
        "MPS, memory 8Gi",
        gpu(mps(defaultPinnedDeviceMemoryLimit="8Gi")),
        GPUConfig(MPS(None, Quantity.parse("8Gi"))),
    ),
    (
        "MPS, memory 1Mi",
        gpu(mps(defaultPinnedDeviceMemoryLimit="1Mi")),
        GPUConfig(MPS(None, Quantity.parse("1Mi"))),
    ),
    (
        "MPS, memory as a number",
        gpu(mps(defaultPinnedDeviceMemoryLimit=1048576)),
        GPUConfig(MPS(None, Quantity.parse("1Mi"))),
    ),
    (
        "MPS, memory 1.5Gi",
        gpu(mps(defaultPinnedDeviceMemoryLimit="1.5Gi")),
        GPUConfig(MPS(None, Quantity.parse("1536Mi"))),
    ),
    (
        "MPS, both",
        gpu(mps(defaultActiveThreadPercentage=50, defaultPinnedDeviceMemoryLimit="512Mi")),
        GPUConfig(MPS(50, Quantity.parse("512Mi"))),
    ),
    ("MIG, nothing set", mig(), MIGConfig()),
    ("MIG with MPS", mig(mps(defaultActiveThreadPercentage=30)), MIGConfig(MPS(30))),
    ("VFIO", {"apiVersion": LEGACY_API_VERSION, "kind": "VFIOConfig"}, VFIOConfig()),
]


@pytest.mark.parametrize(("parameters", "expected"), [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_configs_decode(parameters: Any, expected: Any) -> None:
    assert decode(parameters) == expected
    assert decode(encode(expected)) == expected


@pytest.mark.parametrize(("parameters", "expected"), [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_the_canonical_spelling_decodes_alike(parameters: Any, expected: Any) -> None:
    canonical = respell(parameters)
    assert canonical["apiVersion"] == API_VERSION
    assert decode(canonical) == expected


def test_the_vm_modules_config_is_a_vfio_config() -> None:
    # Exactly what deckhouse/virtualization puts in the ResourceClaimTemplate of a VM's GPU.
    assert decode({"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"}) == (
        VFIOConfig()
    )


def test_errors_can_be_rooted_at_the_objects_path() -> None:
    with pytest.raises(ConfigError) as error:
        decode(gpu(mps(defaultActiveThreadPercentage=150)))
    rooted = error.value.under("spec.config[0].opaque.parameters")
    assert rooted.problems == (
        Problem(
            "spec.config[0].opaque.parameters.sharing.mps.defaultActiveThreadPercentage",
            "150 is above the maximum 100",
        ),
    )
    with pytest.raises(ConfigError) as error:
        decode([])
    assert str(error.value.under("spec.config[0].opaque.parameters")) == (
        "spec.config[0].opaque.parameters: must be a JSON object, not an array"
    )


def test_device_types_and_interval_values() -> None:
    assert [device_type(c) for c in (GPUConfig(), VFIOConfig(), MIGConfig())] == [
        "Physical",
        "Physical",
        "MIG",
    ]
    assert [i.nvidia_smi_value for i in TimeSliceInterval] == [0, 1, 2, 3]


def test_canonical_form() -> None:
    config = GPUConfig(MPS(50, Quantity.parse("8Gi")))
    assert encode(config) == {
        "apiVersion": API_VERSION,
        "kind": "GpuConfig",
        "sharing": {
            "strategy": "MPS",
            "mps": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "8Gi"},
        },
    }
    assert encode(GPUConfig(TimeSlicing())) == {
        "apiVersion": API_VERSION,
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Default"}},
    }
    assert encode(VFIOConfig()) == {"apiVersion": API_VERSION, "kind": "VfioDeviceConfig"}
    assert encode(MIGConfig()) == {"apiVersion": API_VERSION, "kind": "MigDeviceConfig"}
    assert API_VERSION == "resource.gpu.deckhouse.io/v1alpha1"
    assert LEGACY_API_VERSION == "gpu.deckhouse.io/v1alpha1"


def test_configs_are_frozen_and_comparable() -> None:
    # prepare compares the configs of the shares of one card: they must use the same settings
    assert decode(gpu(mps(defaultPinnedDeviceMemoryLimit="1Gi"))) == decode(
        gpu(mps(defaultPinnedDeviceMemoryLimit="1024Mi"))
    )
    assert hash(GPUConfig(MPS(10))) == hash(GPUConfig(MPS(10)))
    with pytest.raises(AttributeError):
        GPUConfig().sharing = MPS()  # type: ignore[misc]
