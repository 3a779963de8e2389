"""The admission review of gpu.deckhouse.io opaque config in DeviceClasses, ResourceClaims and
ResourceClaimTemplates: ours judged with object paths, everything else allowed untouched, and odd
objects answered, never an exception."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deckhouse_gpu.domain.config.opaque_config import API_VERSION
from deckhouse_gpu.services.config_admission import review

UID = "6f1e3a52-8d5c-4d0b-9a59-2b2f0c6a1e11"
MPS = {"apiVersion": API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
TIME_SLICING = {"apiVersion": API_VERSION, "kind": "GPUConfig", "sharing": {"strategy": "TimeSlicing"}}
MIG_MPS = {"apiVersion": API_VERSION, "kind": "MIGConfig", "sharing": {"strategy": "MPS"}}
VFIO = {"apiVersion": API_VERSION, "kind": "VFIOConfig"}
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
    bad_kind = {"apiVersion": API_VERSION, "kind": "TPUConfig"}
    message = denial(
        review(request(MAKERS[kind](ours(TOO_HIGH), ours(bad_kind), ours({"kind": "VFIOConfig"}))))
    )
    prefix = PREFIX[kind]
    assert message.split("; ") == [
        f"{prefix}[0].opaque.parameters.{PERCENTAGE}: 150 is above the maximum 100",
        f'{prefix}[1].opaque.parameters.kind: "TPUConfig" is not one of GPUConfig, MIGConfig, VFIOConfig',
        f"{prefix}[2].opaque.parameters.apiVersion: required, use gpu.deckhouse.io/v1alpha1",
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
        "apiVersion: gpu.deckhouse.io/v1alpha1, kind: GPUConfig; "
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


# --- odd objects


ODD_OBJECTS: list[Any] = [
    None,
    "DeviceClass",
    [],
    {},
    {"spec": None},
    {"spec": []},
    {"spec": {"config": None}},
    {"spec": {"config": "yes"}},
    {"spec": {"config": {"opaque": {"driver": "gpu.deckhouse.io"}}}},
    {"spec": {"config": [None, 1, "x", [], {"opaque": None}, {"opaque": "gpu.deckhouse.io"}]}},
    {"spec": {"config": [{"opaque": {"driver": ["gpu.deckhouse.io"]}}]}},
    {"spec": {"devices": None, "spec": 5}},
]


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("obj", ODD_OBJECTS)
def test_odd_objects_without_our_config_are_allowed(kind: str, obj: Any) -> None:
    assert review(request(obj, kind=kind)) == {"uid": UID, "allowed": True}


@pytest.mark.parametrize(
    "devices",
    [
        {"requests": None, "config": [ours(MPS, ["gpu"])]},
        {"requests": "gpu", "config": [ours(MPS, ["gpu"])]},
        {
            "requests": [None, {"name": 5}, {"name": "gpu", "firstAvailable": "x"}],
            "config": [ours(MPS, ["x"])],
        },
        {
            "requests": [{"name": "any", "firstAvailable": [None, {"name": None}]}],
            "config": [ours(MPS, ["any/"])],
        },
    ],
)
def test_odd_requests_give_a_clear_denial(devices: dict[str, Any]) -> None:
    message = denial(review(request({"kind": "ResourceClaim", "spec": {"devices": devices}})))
    assert message.startswith("spec.devices.config[0].requests[0]: ")
    assert "is not a request of this claim" in message


def test_a_request_without_uid_is_answered() -> None:
    assert review({}) == {"uid": "", "allowed": True}
    assert review({"uid": 5, "operation": "CREATE"}) == {"uid": "", "allowed": True}


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.sampled_from(["gpu.deckhouse.io", "gpu", "MPS", API_VERSION, "GPUConfig", "8Gi"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "opaque",
                    "driver",
                    "parameters",
                    "requests",
                    "config",
                    "spec",
                    "devices",
                    "name",
                    "sharing",
                    "strategy",
                    "mps",
                    "apiVersion",
                    "kind",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(MAKERS)), junk=JSON, operation=st.sampled_from(["CREATE", "UPDATE"]))
def test_any_json_gets_an_answer(kind: str, junk: Any, operation: str) -> None:
    for obj in (
        junk,
        MAKERS[kind](junk),
        MAKERS[kind](ours(junk), ours(MPS, junk)),
        {"spec": {"devices": junk}},
    ):
        response = review(request(obj, operation, old=junk, kind=kind))
        assert response["uid"] == UID
        assert isinstance(response["allowed"], bool)
        assert response["allowed"] or response["status"]["message"]
