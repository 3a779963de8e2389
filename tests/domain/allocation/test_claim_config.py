# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which opaque config applies to an allocated device, and what prepare refuses."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.allocation.claim_config import (
    ConfigRefused,
    device_config,
    unknown_requests,
)
from deckhouse_gpu.domain.config.mps_sharing import MPS
from deckhouse_gpu.domain.config.opaque_types import GPUConfig, MIGConfig, VFIOConfig
from deckhouse_gpu.domain.config.time_slicing import TimeSlicing

API = "gpu.deckhouse.io/v1alpha1"


def entry(
    parameters: Any,
    source: str = "FromClaim",
    requests: list[str] | None = None,
    driver: str = "gpu.deckhouse.io",
) -> dict[str, Any]:
    found: dict[str, Any] = {"source": source, "opaque": {"driver": driver, "parameters": parameters}}
    if requests is not None:
        found["requests"] = requests
    return found


def allocation(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"results": [], "config": list(entries)}}


GPU_MPS = {"apiVersion": API, "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
GPU_TS = {"apiVersion": API, "kind": "GPUConfig", "sharing": {"strategy": "TimeSlicing"}}
MIG_MPS = {"apiVersion": API, "kind": "MIGConfig", "sharing": {"strategy": "MPS"}}
VFIO = {"apiVersion": API, "kind": "VFIOConfig"}
VFIO_DEVICE = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"}


def test_no_config_is_none() -> None:
    assert device_config({"request": "gpu"}, allocation(), "Physical") is None


def test_the_claims_config_replaces_the_classes_for_the_same_device_type() -> None:
    found = device_config(
        {"request": "gpu"}, allocation(entry(GPU_TS, "FromClass"), entry(GPU_MPS)), "Physical"
    )
    assert found == GPUConfig(sharing=MPS())


def test_each_device_gets_the_config_of_its_type() -> None:
    both = allocation(entry(GPU_TS, "FromClass"), entry(MIG_MPS, "FromClass"))
    assert device_config({"request": "gpu"}, both, "MIG") == MIGConfig(sharing=MPS())
    assert device_config({"request": "gpu"}, both, "Physical") == GPUConfig(sharing=TimeSlicing())


def test_entries_for_other_requests_and_other_drivers_do_not_apply() -> None:
    found = allocation(entry(GPU_MPS, requests=["other"]), entry({"x": 1}, driver="other.example.com"))
    assert device_config({"request": "gpu"}, found, "Physical") is None
    assert device_config(
        {"request": "gpu/mig"}, allocation(entry(MIG_MPS, requests=["gpu"])), "MIG"
    ) == MIGConfig(sharing=MPS())


def test_an_invalid_config_is_refused_naming_its_place_and_field() -> None:
    bad = {
        "apiVersion": API,
        "kind": "GPUConfig",
        "sharing": {"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 150}},
    }
    with pytest.raises(
        ConfigRefused, match=r"^allocation config\[1\]: sharing\.mps\.defaultActiveThreadPercentage: 150"
    ):
        device_config({"request": "gpu"}, allocation(entry(GPU_TS), entry(bad)), "Physical")


def test_vfio_on_a_share_is_refused() -> None:
    with pytest.raises(ConfigRefused, match=r"VfioDeviceConfig \(VFIOConfig\) needs a whole card of its own"):
        device_config({"request": "gpu", "shareID": "x"}, allocation(entry(VFIO)), "Physical")
    assert device_config({"request": "gpu"}, allocation(entry(VFIO)), "Physical") == VFIOConfig()


def test_vfio_is_refused_on_a_mig_instance_unless_the_request_also_configures_mig() -> None:
    with pytest.raises(
        ConfigRefused,
        match=r"VfioDeviceConfig \(VFIOConfig\) asks for a whole card for a virtual machine, but",
    ):
        device_config({"request": "gpu"}, allocation(entry(VFIO)), "MIG")
    # A request that may get either (firstAvailable) carries one config of each type.
    either = allocation(entry(VFIO, requests=["gpu"]), entry(MIG_MPS, requests=["gpu"]))
    assert device_config({"request": "gpu/mig"}, either, "MIG") == MIGConfig(sharing=MPS())
    assert device_config({"request": "gpu/whole"}, either, "Physical") == VFIOConfig()


def test_config_entries_naming_requests_the_claim_lacks_are_found_as_the_webhook_words_them() -> None:
    devices = {
        "requests": [{"name": "gpu"}, {"name": "alt", "firstAvailable": [{"name": "big"}, {"name": "small"}]}]
    }
    found = unknown_requests(
        allocation(
            entry(GPU_MPS, requests=["gpu", "alt/small", "alt"]),
            entry(GPU_TS, requests=["gpus"]),
            entry(GPU_TS, requests=["alt/tiny"]),
            entry(GPU_TS, requests=["nope"], driver="other.example.com"),  # not ours: not our business
        ),
        devices,
    )
    assert found == [
        'allocation config[1].requests[0]: "gpus" is not a request of this claim (its requests: alt, gpu)',
        'allocation config[2].requests[0]: "alt/tiny" is not a request of this claim '
        "(its requests: alt, gpu)",
    ]
    assert unknown_requests(allocation(entry(GPU_TS, requests=["gpu"])), {}) == [
        'allocation config[0].requests[0]: "gpu" is not a request of this claim (its requests: none)'
    ]


def test_the_canonical_spelling_applies_as_the_legacy_one() -> None:
    # The VM module's VfioDeviceConfig, from the class (a GPUClass's DeviceClass) or the claim.
    assert device_config({"request": "gpu"}, allocation(entry(VFIO_DEVICE, "FromClass")), "Physical") == (
        VFIOConfig()
    )
    canonical_mps = {**GPU_MPS, "apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "GpuConfig"}
    found = device_config(
        {"request": "gpu"}, allocation(entry(VFIO, "FromClass"), entry(canonical_mps)), "Physical"
    )
    assert found == GPUConfig(sharing=MPS())


def test_a_near_miss_is_refused_at_prepare_with_the_webhooks_words() -> None:
    near = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VFIOConfig"}
    with pytest.raises(ConfigRefused) as refused:
        device_config({"request": "gpu"}, allocation(entry(near)), "Physical")
    assert str(refused.value) == (
        'allocation config[0]: kind: "VFIOConfig" is a kind of gpu.deckhouse.io/v1alpha1, not of '
        "resource.gpu.deckhouse.io/v1alpha1: use kind VfioDeviceConfig, "
        "or apiVersion gpu.deckhouse.io/v1alpha1"
    )
