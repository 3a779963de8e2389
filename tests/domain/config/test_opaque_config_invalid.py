# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The opaque config of gpu.deckhouse.io: every rule, of the envelope (both spellings and their
near misses), sharing, time-slicing, MPS and MIG, with its exact message, and the size limit."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.config.opaque_config import ConfigError, decode
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from tests.domain.config.opaque_config_params import gpu, mig, mps

KINDS = "GPUConfig, MIGConfig, VFIOConfig"  # the legacy spelling's, which most cases use
NEW_KINDS = "GpuConfig, MigDeviceConfig, VfioDeviceConfig"
CANONICAL, LEGACY = "resource.gpu.deckhouse.io/v1alpha1", "gpu.deckhouse.io/v1alpha1"


INVALID: list[tuple[str, Any, str]] = [
    # The envelope
    ("not an object", [], "parameters: must be a JSON object, not an array"),
    ("a string", "GPUConfig", "parameters: must be a JSON object, not a string"),
    (
        "no apiVersion",
        {"kind": "GPUConfig"},
        "apiVersion: required, for kind GPUConfig use gpu.deckhouse.io/v1alpha1 "
        "(or resource.gpu.deckhouse.io/v1alpha1 with kind GpuConfig)",
    ),
    (
        "no apiVersion, a canonical kind",
        {"kind": "VfioDeviceConfig"},
        "apiVersion: required, for kind VfioDeviceConfig use resource.gpu.deckhouse.io/v1alpha1",
    ),
    (
        "no apiVersion nor kind",
        {},
        f"apiVersion: required, use {CANONICAL} (or the older {LEGACY}); kind: required, one of {NEW_KINDS}",
    ),
    (
        "another version",
        {"apiVersion": "gpu.deckhouse.io/v1", "kind": "GPUConfig"},
        'apiVersion: "gpu.deckhouse.io/v1" is not supported, '
        "for kind GPUConfig use gpu.deckhouse.io/v1alpha1 "
        "(or resource.gpu.deckhouse.io/v1alpha1 with kind GpuConfig)",
    ),
    (
        "NVIDIA's group",
        {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"},
        'apiVersion: "resource.nvidia.com/v1beta1" is not supported, '
        "for kind GpuConfig use resource.gpu.deckhouse.io/v1alpha1",
    ),
    (
        "NVIDIA's group, a kind of neither",
        {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ImexChannelConfig"},
        'apiVersion: "resource.nvidia.com/v1beta1" is not supported, '
        f"use {CANONICAL} (or the older {LEGACY}); "
        f'kind: "ImexChannelConfig" is not one of {NEW_KINDS}',
    ),
    (
        "version of a wrong type",
        {"apiVersion": 1, "kind": "GPUConfig"},
        "apiVersion: an integer is not supported, for kind GPUConfig use gpu.deckhouse.io/v1alpha1 "
        "(or resource.gpu.deckhouse.io/v1alpha1 with kind GpuConfig)",
    ),
    # Near misses of the spelling: the message names the right one
    (
        "the legacy VFIO kind in the canonical group",
        {"apiVersion": CANONICAL, "kind": "VFIOConfig"},
        f'kind: "VFIOConfig" is a kind of {LEGACY}, not of {CANONICAL}: '
        f"use kind VfioDeviceConfig, or apiVersion {LEGACY}",
    ),
    (
        "the canonical VFIO kind in the legacy group",
        {"apiVersion": LEGACY, "kind": "VfioDeviceConfig"},
        f'kind: "VfioDeviceConfig" is a kind of {CANONICAL}, not of {LEGACY}: '
        f"use kind VFIOConfig, or apiVersion {CANONICAL}",
    ),
    (
        "the legacy GPU kind in the canonical group",
        {"apiVersion": CANONICAL, "kind": "GPUConfig"},
        f'kind: "GPUConfig" is a kind of {LEGACY}, not of {CANONICAL}: '
        f"use kind GpuConfig, or apiVersion {LEGACY}",
    ),
    (
        "NVIDIA's MIG kind in the legacy group",
        {"apiVersion": LEGACY, "kind": "MigDeviceConfig"},
        f'kind: "MigDeviceConfig" is a kind of {CANONICAL}, not of {LEGACY}: '
        f"use kind MIGConfig, or apiVersion {CANONICAL}",
    ),
    (
        "lower case, canonical group",
        {"apiVersion": CANONICAL, "kind": "vfiodeviceconfig"},
        f'kind: "vfiodeviceconfig" is not one of {NEW_KINDS}: kinds are case-sensitive, use VfioDeviceConfig',
    ),
    (
        "another case, legacy group",
        {"apiVersion": LEGACY, "kind": "VfioConfig"},
        f'kind: "VfioConfig" is not one of {KINDS}: kinds are case-sensitive, use VFIOConfig',
    ),
    (
        "a legacy kind in another case, canonical group",
        {"apiVersion": CANONICAL, "kind": "vfioconfig"},
        f'kind: "vfioconfig" is not one of {NEW_KINDS}: did you mean VfioDeviceConfig?',
    ),
    (
        "Device in a legacy kind",
        {"apiVersion": LEGACY, "kind": "GPUDeviceConfig"},
        f'kind: "GPUDeviceConfig" is not one of {KINDS}: did you mean GPUConfig?',
    ),
    (
        "the group in another case",
        {"apiVersion": "Resource.GPU.Deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"},
        'apiVersion: "Resource.GPU.Deckhouse.io/v1alpha1" is not supported: it is case-sensitive, '
        f"use {CANONICAL}",
    ),
    ("no kind, canonical group", {"apiVersion": CANONICAL}, f"kind: required, one of {NEW_KINDS}"),
    (
        "NVIDIA's field names",
        {
            "apiVersion": CANONICAL,
            "kind": "GpuConfig",
            "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}},
        },
        "sharing.mpsConfig: unknown field "
        "(sharing has strategy, timeSlicing, mps; NVIDIA's mpsConfig is mps here)",
    ),
    ("no kind", {"apiVersion": LEGACY_API_VERSION}, f"kind: required, one of {KINDS}"),
    ("null kind", {"apiVersion": LEGACY_API_VERSION, "kind": None}, f"kind: required, one of {KINDS}"),
    (
        "unknown kind",
        {"apiVersion": LEGACY_API_VERSION, "kind": "TPUConfig"},
        f'kind: "TPUConfig" is not one of {KINDS}',
    ),
    (
        "kind of a wrong type",
        {"apiVersion": LEGACY_API_VERSION, "kind": ["GPUConfig"]},
        f"kind: an array is not one of {KINDS}",
    ),
    (
        "unknown field",
        gpu(metadata={"name": "x"}),
        "metadata: unknown field (GPUConfig has apiVersion, kind, sharing)",
    ),
    (
        "VFIO takes no fields",
        {"apiVersion": LEGACY_API_VERSION, "kind": "VFIOConfig", "sharing": {}},
        "sharing: unknown field (VFIOConfig has apiVersion, kind)",
    ),
    ("too large", gpu(padding="x" * 10240), "parameters: 10314 bytes, above the limit of 10240"),
    # sharing
    ("sharing of a wrong type", gpu("MPS"), "sharing: must be an object, not a string"),
    ("no strategy", gpu({}), "sharing.strategy: required, one of TimeSlicing, MPS"),
    (
        "unknown strategy",
        gpu({"strategy": "Exclusive"}),
        'sharing.strategy: "Exclusive" is not one of TimeSlicing, MPS',
    ),
    (
        "strategy of a wrong type",
        gpu({"strategy": True}),
        "sharing.strategy: a boolean is not one of TimeSlicing, MPS",
    ),
    (
        "strategy in lower case",
        gpu({"strategy": "mps"}),
        'sharing.strategy: "mps" is not one of TimeSlicing, MPS',
    ),
    (
        "unknown sharing field",
        gpu({"strategy": "MPS", "replicas": 4}),
        "sharing.replicas: unknown field (sharing has strategy, timeSlicing, mps)",
    ),
    (
        "MPS settings with time-slicing",
        gpu({"strategy": "TimeSlicing", "mps": {}}),
        "sharing.mps: set only with strategy MPS, not TimeSlicing",
    ),
    (
        "time-slicing settings with MPS",
        gpu({"strategy": "MPS", "timeSlicing": {"interval": "Long"}}),
        "sharing.timeSlicing: set only with strategy TimeSlicing, not MPS",
    ),
    # timeSlicing
    (
        "unknown interval",
        gpu({"strategy": "TimeSlicing", "timeSlicing": {"interval": "Fast"}}),
        'sharing.timeSlicing.interval: "Fast" is not one of Default, Short, Medium, Long',
    ),
    (
        "interval as a number",
        gpu({"strategy": "TimeSlicing", "timeSlicing": {"interval": 2}}),
        "sharing.timeSlicing.interval: an integer is not one of Default, Short, Medium, Long",
    ),
    (
        "time-slicing of a wrong type",
        gpu({"strategy": "TimeSlicing", "timeSlicing": "Long"}),
        "sharing.timeSlicing: must be an object, not a string",
    ),
    (
        "unknown time-slicing field",
        gpu({"strategy": "TimeSlicing", "timeSlicing": {"replicas": 2}}),
        "sharing.timeSlicing.replicas: unknown field (timeSlicing has interval)",
    ),
    # mps
    (
        "mps of a wrong type",
        gpu({"strategy": "MPS", "mps": []}),
        "sharing.mps: must be an object, not an array",
    ),
    (
        "unknown mps field",
        gpu(mps(multiUser=True)),
        "sharing.mps.multiUser: unknown field "
        "(mps has defaultActiveThreadPercentage, defaultPinnedDeviceMemoryLimit)",
    ),
    (
        "percentage 0",
        gpu(mps(defaultActiveThreadPercentage=0)),
        "sharing.mps.defaultActiveThreadPercentage: 0 is below the minimum 1",
    ),
    (
        "percentage 150",
        gpu(mps(defaultActiveThreadPercentage=150)),
        "sharing.mps.defaultActiveThreadPercentage: 150 is above the maximum 100",
    ),
    (
        "percentage as text",
        gpu(mps(defaultActiveThreadPercentage="50")),
        "sharing.mps.defaultActiveThreadPercentage: must be an integer, not a string",
    ),
    (
        "percentage as a fraction",
        gpu(mps(defaultActiveThreadPercentage=50.5)),
        "sharing.mps.defaultActiveThreadPercentage: must be an integer, not a number",
    ),
    (
        "percentage as a boolean",
        gpu(mps(defaultActiveThreadPercentage=True)),
        "sharing.mps.defaultActiveThreadPercentage: must be an integer, not a boolean",
    ),
    (
        "memory not a quantity",
        gpu(mps(defaultPinnedDeviceMemoryLimit="8 GB")),
        'sharing.mps.defaultPinnedDeviceMemoryLimit: "8 GB" is not a quantity such as 512Mi or 8Gi',
    ),
    (
        "memory of a wrong type",
        gpu(mps(defaultPinnedDeviceMemoryLimit={"value": 1})),
        "sharing.mps.defaultPinnedDeviceMemoryLimit: must be a quantity such as 8Gi, not an object",
    ),
    (
        "memory zero",
        gpu(mps(defaultPinnedDeviceMemoryLimit="0")),
        'sharing.mps.defaultPinnedDeviceMemoryLimit: "0" is below the minimum 1Mi',
    ),
    (
        "memory negative",
        gpu(mps(defaultPinnedDeviceMemoryLimit="-1Gi")),
        'sharing.mps.defaultPinnedDeviceMemoryLimit: "-1Gi" is below the minimum 1Mi',
    ),
    (
        "memory in decimal units",
        gpu(mps(defaultPinnedDeviceMemoryLimit="8G")),
        'sharing.mps.defaultPinnedDeviceMemoryLimit: "8G" is not a whole number of Mi '
        "(MPS limits memory in MiB)",
    ),
    # MIG
    (
        "time-slicing on MIG",
        mig({"strategy": "TimeSlicing"}),
        "sharing.strategy: TimeSlicing is not available for MIG devices: the time-slice interval is "
        "a setting of the whole card, and processes in one MIG instance are time-sliced anyway; use MPS",
    ),
    (
        "time-slicing settings on MIG",
        mig({"strategy": "MPS", "timeSlicing": {}}),
        "sharing.timeSlicing: unknown field (sharing has strategy, mps)",
    ),
    ("MIG without a strategy", mig({}), "sharing.strategy: required, one of MPS"),
    (
        "MIG, MPS out of range",
        mig(mps(defaultActiveThreadPercentage=101)),
        "sharing.mps.defaultActiveThreadPercentage: 101 is above the maximum 100",
    ),
    # every finding at once, in document order
    (
        "several problems",
        gpu(mps(defaultActiveThreadPercentage=0, defaultPinnedDeviceMemoryLimit="1k"), extra=1),
        "extra: unknown field (GPUConfig has apiVersion, kind, sharing); "
        "sharing.mps.defaultActiveThreadPercentage: 0 is below the minimum 1; "
        'sharing.mps.defaultPinnedDeviceMemoryLimit: "1k" is below the minimum 1Mi',
    ),
]


@pytest.mark.parametrize(("parameters", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_configs_name_the_field(parameters: Any, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        decode(parameters)
    assert str(error.value) == message


def test_every_invalid_case_is_different() -> None:
    assert len({c[0] for c in INVALID}) == len(INVALID)


def test_the_size_limit_is_the_api_servers() -> None:
    fits = gpu(
        padding="x"
        * (10240 - len('{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"GPUConfig","padding":""}'))
    )
    with pytest.raises(ConfigError, match="padding: unknown field"):
        decode(fits)  # at the limit: judged on its fields, not its size
