# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission review of gpu.deckhouse.io opaque config in DeviceClasses, ResourceClaims and
ResourceClaimTemplates: ours judged with object paths, everything else allowed untouched, and an
update judged only on the entries it changes. Requests and one config per device type are in
test_config_admission_requests.py, odd objects in test_config_admission_odd.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.services.allocation.config_admission import review
from tests.services.allocation.config_admission_objects import (
    MAKERS,
    MIG_MPS,
    MPS,
    PERCENTAGE,
    PREFIX,
    TIME_SLICING,
    TOO_HIGH,
    UID,
    VFIO,
    claim,
    denial,
    device_class,
    ours,
    request,
    theirs,
)


@pytest.mark.parametrize("kind", MAKERS)
def test_a_valid_config_is_allowed(kind: str) -> None:
    response = review(request(MAKERS[kind](theirs(), ours(MPS), ours(MIG_MPS))))
    assert response == {"uid": UID, "allowed": True}


@pytest.mark.parametrize("kind", MAKERS)
def test_an_invalid_config_is_denied_with_its_object_path(kind: str) -> None:
    message = denial(review(request(MAKERS[kind](theirs(), ours(TOO_HIGH)))))
    assert message == (f"{PREFIX[kind]}[1].opaque.parameters.{PERCENTAGE}: 150 is above the maximum 100")


@pytest.mark.parametrize("kind", MAKERS)
def test_every_problem_of_every_entry_is_named(kind: str) -> None:
    bad_kind = {"apiVersion": LEGACY_API_VERSION, "kind": "TPUConfig"}
    message = denial(
        review(request(MAKERS[kind](ours(TOO_HIGH), ours(bad_kind), ours({"kind": "VFIOConfig"}))))
    )
    prefix = PREFIX[kind]
    assert message.split("; ") == [
        f"{prefix}[0].opaque.parameters.{PERCENTAGE}: 150 is above the maximum 100",
        f'{prefix}[1].opaque.parameters.kind: "TPUConfig" is not one of GPUConfig, MIGConfig, VFIOConfig',
        f"{prefix}[2].opaque.parameters.apiVersion: required, "
        "for kind VFIOConfig use gpu.deckhouse.io/v1alpha1 "
        "(or resource.gpu.deckhouse.io/v1alpha1 with kind VfioDeviceConfig)",
    ]


@pytest.mark.parametrize("kind", MAKERS)
def test_other_drivers_and_objects_without_config_are_untouched(kind: str) -> None:
    assert review(request(MAKERS[kind](theirs(), theirs({"anything": ["goes"]})))) == {
        "uid": UID,
        "allowed": True,
    }
    assert review(request(MAKERS[kind]())) == {"uid": UID, "allowed": True}


@pytest.mark.parametrize("kind", MAKERS)
def test_missing_or_odd_parameters_are_denied(kind: str) -> None:
    entry = {"opaque": {"driver": "gpu.deckhouse.io"}}
    message = denial(review(request(MAKERS[kind](entry, ours([MPS])))))
    assert message == (
        f"{PREFIX[kind]}[0].opaque.parameters: required, a gpu.deckhouse.io config such as "
        "apiVersion: resource.gpu.deckhouse.io/v1alpha1, kind: GpuConfig; "
        f"{PREFIX[kind]}[1].opaque.parameters: must be a JSON object, not an array"
    )


def test_parameters_above_10_kib_are_denied() -> None:
    big = {**MPS, "padding": "x" * 10240}
    assert denial(review(request(claim(ours(big))))) == (
        "spec.devices.config[0].opaque.parameters: 10343 bytes, above the limit of 10240"
    )


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT", None, 7])
def test_delete_and_other_operations_are_allowed(operation: Any) -> None:
    response = review(request(None, operation, old=claim(ours(TOO_HIGH))))
    assert response == {"uid": UID, "allowed": True}


@pytest.mark.parametrize(
    "kind",
    [
        {"group": "", "version": "v1", "kind": "Pod"},
        {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
        {"group": "resource.k8s.io", "version": "v1beta2", "kind": "ResourceClaim"},
        {"group": "example.com", "version": "v1", "kind": "ResourceClaim"},
        {"kind": "ResourceClaim"},
        "ResourceClaim",
        None,
    ],
)
def test_unknown_kinds_are_allowed(kind: Any) -> None:
    given_request = request(claim(ours(TOO_HIGH)))
    given_request["kind"] = kind
    assert review(given_request) == {"uid": UID, "allowed": True}


# --- updates


def test_an_update_that_keeps_our_config_is_allowed_unjudged() -> None:
    old = device_class(ours(TOO_HIGH))  # stored before a stricter version of the module
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    new["spec"]["config"].append(theirs())
    assert review(request(new, "UPDATE", old)) == {"uid": UID, "allowed": True}


def test_an_update_that_adds_config_judges_only_the_new_entries() -> None:
    old = device_class(ours(TOO_HIGH, None))
    new = device_class(ours(TOO_HIGH, None), ours(MIG_MPS))
    response = review(request(new, "UPDATE", old))
    assert response["allowed"] is True
    assert response["warnings"] == [
        f"spec.config[0].opaque.parameters.{PERCENTAGE}: 150 is above the maximum 100; "
        "kept because this entry did not change, but gpu-handler refuses it at prepare"
    ]


def test_an_added_entry_is_checked_against_the_kept_ones() -> None:
    old = device_class(ours(MPS))
    assert denial(review(request(device_class(ours(MPS), ours(VFIO)), "UPDATE", old))) == (
        "spec.config[1]: the class already configures whole cards at spec.config[0]; give it one such config"
    )


def test_an_update_that_changes_our_config_is_judged() -> None:
    old = device_class(ours(MPS))
    assert denial(review(request(device_class(ours(TOO_HIGH)), "UPDATE", old))).startswith("spec.config[0].")
    assert review(request(device_class(ours(TIME_SLICING)), "UPDATE", old)) == {"uid": UID, "allowed": True}


def test_an_update_without_old_object_is_judged_in_full() -> None:
    assert review(request(device_class(ours(TOO_HIGH)), "UPDATE", None))["allowed"] is False
