# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission review of gpu.deckhouse.io opaque config against the requests of claims: the
requests a config names must exist, and a request, or a whole DeviceClass, gets at most one of our
configs per device type."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.services.allocation.config_admission import review
from tests.services.allocation.config_admission_objects import (
    MAKERS,
    MIG_MPS,
    MPS,
    PREFIX,
    TIME_SLICING,
    VFIO,
    claim,
    denial,
    device_class,
    ours,
    request,
    theirs,
)

# --- requests of claims


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
@pytest.mark.parametrize("requests", [["gpu"], ["any"], ["any/a30"], ["gpu", "any/a100"], []])
def test_config_for_existing_requests_is_allowed(kind: str, requests: list[str]) -> None:
    assert review(request(MAKERS[kind](ours(MPS, requests))))["allowed"] is True


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
def test_config_for_a_missing_request_is_denied(kind: str) -> None:
    message = denial(review(request(MAKERS[kind](ours(MPS, ["gpu", "gpus", "any/h100", "gpu/x", 3])))))
    prefix = PREFIX[kind]
    assert message.split("; ") == [
        f'{prefix}[0].requests[1]: "gpus" is not a request of this claim (its requests: any, gpu)',
        f'{prefix}[0].requests[2]: "any/h100" is not a request of this claim (its requests: any, gpu)',
        f'{prefix}[0].requests[3]: "gpu/x" is not a request of this claim (its requests: any, gpu)',
        f"{prefix}[0].requests[4]: must be a request name",
    ]


def test_requests_of_a_wrong_type_are_denied() -> None:
    message = denial(review(request(claim(ours(MPS, "gpu")))))  # type: ignore[arg-type]
    assert message == "spec.devices.config[0].requests: must be an array of request names"


def test_a_claim_without_requests_names_none() -> None:
    obj = {"kind": "ResourceClaim", "spec": {"devices": {"config": [ours(MPS, ["gpu"])]}}}
    assert denial(review(request(obj))) == (
        'spec.devices.config[0].requests[0]: "gpu" is not a request of this claim (its requests: none)'
    )


def test_requests_of_other_drivers_configs_are_left_to_the_api_server() -> None:
    entry = {**theirs(), "requests": ["nope"]}
    assert review(request(claim(entry)))["allowed"] is True


# --- one config of a device type per request


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        (
            (ours(MPS), ours(TIME_SLICING)),
            "every request already has a config for whole cards at spec.devices.config[0]",
        ),
        (
            (ours(MPS), ours(VFIO, ["gpu"])),
            "request gpu already has a config for whole cards at spec.devices.config[0]",
        ),
        (
            (ours(MPS, ["gpu"]), ours(VFIO, ["gpu"])),
            "request gpu already has a config for whole cards at spec.devices.config[0]",
        ),
        (
            (ours(MPS, ["any"]), ours(VFIO, ["any/a30"])),
            "request any/a30 already has a config for whole cards at spec.devices.config[0]",
        ),
        (
            (ours(MIG_MPS, ["any"]), ours(MIG_MPS)),
            "request any/a100, any/a30 already has a config for MIG devices at spec.devices.config[0]",
        ),
    ],
)
def test_two_configs_of_one_device_type_for_one_request_are_denied(config: Any, problem: str) -> None:
    assert (
        denial(review(request(claim(*config)))) == f"spec.devices.config[1]: {problem}; give each request one"
    )


@pytest.mark.parametrize(
    "config",
    [
        (ours(MPS), ours(MIG_MPS)),  # a whole card gets one, a MIG device the other
        (ours(MPS, ["gpu"]), ours(VFIO, ["any"])),
        (ours(MPS, ["any/a100"]), ours(TIME_SLICING, ["any/a30"])),
        (ours(MPS, ["gpu"]), theirs(), ours(TIME_SLICING, ["any"])),
    ],
)
def test_configs_of_distinct_requests_or_device_types_are_allowed(config: Any) -> None:
    assert review(request(claim(*config)))["allowed"] is True


def test_a_class_carries_one_config_per_device_type() -> None:
    assert review(request(device_class(ours(MPS), ours(MIG_MPS))))["allowed"] is True
    message = denial(review(request(device_class(ours(MPS), theirs(), ours(VFIO)))))
    assert message == (
        "spec.config[2]: the class already configures whole cards at spec.config[0]; give it one such config"
    )
