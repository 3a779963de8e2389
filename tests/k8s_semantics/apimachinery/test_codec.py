# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from dataclasses import dataclass, field
from enum import StrEnum

import pytest

from deckhouse_gpu.domain.inventory.physicalgpu import (
    Condition,
    ConditionStatus,
    MigCapabilities,
    MigProfile,
    NvidiaCapabilities,
    PhysicalGPUStatus,
)
from deckhouse_gpu.k8s_semantics.apimachinery.codec import (
    DecodeError,
    decode,
    encode,
    json_name,
    openapi_schema,
)


class Color(StrEnum):
    RED = "Red"


@dataclass(frozen=True)
class Inner:
    size_mib: int = field(metadata=json_name("sizeMiB"))
    color: Color | None = None


@dataclass(frozen=True)
class Outer:
    node_name: str
    items: list[Inner] | None = None
    enabled: bool | None = None


def test_encode_uses_camel_case_and_overrides_and_drops_none():
    assert encode(Outer("n1", [Inner(5, Color.RED), Inner(6)])) == {
        "nodeName": "n1",
        "items": [{"sizeMiB": 5, "color": "Red"}, {"sizeMiB": 6}],
    }


def test_decode_round_trips_and_ignores_unknown_keys():
    data = {
        "nodeName": "n1",
        "items": [{"sizeMiB": 5, "color": "Red", "future": 1}],
        "enabled": True,
        "x": {},
    }
    value = decode(Outer, data)
    assert value == Outer("n1", [Inner(5, Color.RED)], True)
    assert encode(value) == {"nodeName": "n1", "items": [{"sizeMiB": 5, "color": "Red"}], "enabled": True}


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"nodeName": 3}, "Outer.nodeName"),
        ({"nodeName": "n", "items": [{"sizeMiB": True}]}, "Outer.items[0].sizeMiB"),
        ({"nodeName": "n", "items": [{"sizeMiB": 1, "color": "Blue"}]}, "Outer.items[0].color"),
        ({"nodeName": "n", "items": {"sizeMiB": 1}}, "Outer.items"),
        ({}, "Outer"),
    ],
)
def test_decode_names_the_bad_path(data, path):
    with pytest.raises(DecodeError, match=rf"^{path.replace('[', r'\[').replace(']', r'\]')}"):
        decode(Outer, data)


def test_physicalgpu_status_round_trip():
    status = PhysicalGPUStatus(
        capabilities=None,
        conditions=[
            Condition("DriverReady", ConditionStatus.TRUE, "ValidatorReady", "ok", "2026-01-01T00:00:00Z")
        ],
    )
    nvidia = NvidiaCapabilities(
        compute_cap="8.0",
        power_limit_max_w=165,
        mig=MigCapabilities(4, [MigProfile(14, "1g.6gb", 5949, 1, 4)]),
    )
    encoded = encode(nvidia)
    assert encoded["powerLimitMaxW"] == 165
    assert encoded["mig"]["profiles"][0] == {
        "profileID": 14,
        "name": "1g.6gb",
        "memoryMiB": 5949,
        "sliceCount": 1,
        "maxInstances": 4,
    }
    assert decode(NvidiaCapabilities, encoded) == nvidia
    assert decode(PhysicalGPUStatus, encode(status)) == status


def test_openapi_schema_describes_types_enums_and_lists():
    schema = openapi_schema(Outer)
    assert schema == {
        "type": "object",
        "properties": {
            "nodeName": {"type": "string"},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sizeMiB": {"type": "integer"},
                        "color": {"type": "string", "enum": ["Red"]},
                    },
                },
            },
            "enabled": {"type": "boolean"},
        },
    }
