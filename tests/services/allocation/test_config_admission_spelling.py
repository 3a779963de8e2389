# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The webhook and the two spellings of the opaque config: the canonical one
(resource.gpu.deckhouse.io/v1alpha1, GpuConfig, MigDeviceConfig, VfioDeviceConfig, as the VM module
writes it) and the legacy one (gpu.deckhouse.io/v1alpha1, GPUConfig, MIGConfig, VFIOConfig) are
allowed alike and mean the same; a near miss is denied with the right spelling in the message."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.config.opaque_types import API_VERSION, LEGACY_API_VERSION
from deckhouse_gpu.services.allocation.config_admission import review
from tests.services.allocation.config_admission_objects import (
    MAKERS,
    PREFIX,
    UID,
    VFIO,
    claim,
    denial,
    device_class,
    ours,
    request,
)

CANONICAL_VFIO = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"}
CANONICAL_MPS = {"apiVersion": API_VERSION, "kind": "GpuConfig", "sharing": {"strategy": "MPS"}}
CANONICAL_MIG = {"apiVersion": API_VERSION, "kind": "MigDeviceConfig", "sharing": {"strategy": "MPS"}}


def vm_module_template(gpu_class: str = "vm-a30") -> dict[str, Any]:
    """The ResourceClaimTemplate deckhouse/virtualization makes for one GPU of a VirtualMachine:
    one request of exactly one device of the GPUClass's DeviceClass, and a VfioDeviceConfig."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "vm-linux-gpu-0", "namespace": "vms"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": gpu_class,
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ],
                    "config": [
                        {
                            "requests": ["gpu"],
                            "opaque": {"driver": "gpu.deckhouse.io", "parameters": dict(CANONICAL_VFIO)},
                        }
                    ],
                }
            }
        },
    }


def test_the_vm_modules_template_is_allowed() -> None:
    assert review(request(vm_module_template())) == {"uid": UID, "allowed": True}


@pytest.mark.parametrize("kind", MAKERS)
def test_canonical_configs_are_allowed(kind: str) -> None:
    allowed = {"uid": UID, "allowed": True}
    assert review(request(MAKERS[kind](ours(CANONICAL_MPS), ours(CANONICAL_MIG)))) == allowed
    assert review(request(MAKERS[kind](ours(CANONICAL_VFIO)))) == allowed


@pytest.mark.parametrize("kind", MAKERS)
def test_both_spellings_of_whole_card_configs_are_one_device_type(kind: str) -> None:
    # A VfioDeviceConfig and a legacy VFIOConfig for the same request still leave prepare to guess.
    message = denial(review(request(MAKERS[kind](ours(CANONICAL_VFIO), ours(VFIO)))))
    assert "[1]:" in message
    assert "already" in message
    assert "whole cards at " + PREFIX[kind] + "[0]" in message


def test_the_share_check_reads_the_canonical_spelling() -> None:
    too_much = {**CANONICAL_MPS, "sharing": {"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 50}}}
    share = {
        "name": "gpu",
        "exactly": {"deviceClassName": "c", "capacity": {"requests": {"sharePercent": "25"}}},
    }
    shared = claim(ours(too_much))
    shared["spec"]["devices"]["requests"] = [share]
    message = denial(review(request(shared)))
    assert "defaultActiveThreadPercentage: 50 is above the claim's share of the card (25 %" in message


NEAR_MISSES = [
    (
        {"apiVersion": API_VERSION, "kind": "VFIOConfig"},
        'kind: "VFIOConfig" is a kind of gpu.deckhouse.io/v1alpha1, '
        "not of resource.gpu.deckhouse.io/v1alpha1: "
        "use kind VfioDeviceConfig, or apiVersion gpu.deckhouse.io/v1alpha1",
    ),
    (
        {"apiVersion": LEGACY_API_VERSION, "kind": "VfioDeviceConfig"},
        'kind: "VfioDeviceConfig" is a kind of resource.gpu.deckhouse.io/v1alpha1, '
        "not of gpu.deckhouse.io/v1alpha1: "
        "use kind VFIOConfig, or apiVersion resource.gpu.deckhouse.io/v1alpha1",
    ),
    (
        {"apiVersion": API_VERSION, "kind": "vfiodeviceconfig"},
        'kind: "vfiodeviceconfig" is not one of GpuConfig, MigDeviceConfig, VfioDeviceConfig: '
        "kinds are case-sensitive, use VfioDeviceConfig",
    ),
    (
        {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"},
        'apiVersion: "resource.nvidia.com/v1beta1" is not supported, '
        "for kind VfioDeviceConfig use resource.gpu.deckhouse.io/v1alpha1",
    ),
]


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize(
    ("parameters", "reason"), NEAR_MISSES, ids=["new group", "old group", "case", "nvidia"]
)
def test_a_near_miss_is_denied_naming_the_right_spelling(kind: str, parameters: Any, reason: str) -> None:
    message = denial(review(request(MAKERS[kind](ours(parameters)))))
    assert message == f"{PREFIX[kind]}[0].opaque.parameters.{reason}"


def test_a_class_may_keep_its_legacy_config_while_a_claim_uses_the_canonical_one() -> None:
    assert review(request(device_class(ours(VFIO)))) == {"uid": UID, "allowed": True}
    assert review(request(claim(ours(CANONICAL_VFIO)))) == {"uid": UID, "allowed": True}
