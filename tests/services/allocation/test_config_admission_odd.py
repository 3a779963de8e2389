# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission review of gpu.deckhouse.io opaque config given odd objects, odd requests and any
JSON at all: always an answer, never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.services.allocation.config_admission import review
from tests.services.allocation.config_admission_objects import MAKERS, MPS, UID, denial, ours, request

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
    | st.sampled_from(["gpu.deckhouse.io", "gpu", "MPS", LEGACY_API_VERSION, "GPUConfig", "8Gi"]),
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
