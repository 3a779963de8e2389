# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The compiled health stream protos against the wire format of KUBERNETES-FACTS.md F6.3, byte for byte.

The expected bytes are built by hand from field numbers and wire types (the helpers of
test_kubelet_protos.py), so a renumbered field fails here even though our own two ends would agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor

from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2 as v1
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1alpha1_pb2 as v1alpha1
from tests.adapters.kubelet.test_kubelet_protos import VARINT, _field, _fields, _varint

STRING, INT64, MESSAGE, ENUM = (
    FieldDescriptor.TYPE_STRING,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_MESSAGE,
    FieldDescriptor.TYPE_ENUM,
)
FIELDS = {
    "NodeWatchResourcesRequest": [],
    "DeviceIdentifier": [("pool_name", 1, STRING, False), ("device_name", 2, STRING, False)],
    "DeviceHealth": [
        ("device", 1, MESSAGE, False),
        ("health", 2, ENUM, False),
        ("last_updated_time", 3, INT64, False),
        ("health_check_timeout_seconds", 4, INT64, False),
        ("message", 5, STRING, False),
    ],
    "NodeWatchResourcesResponse": [("devices", 1, MESSAGE, True)],
}
BOTH = pytest.mark.parametrize("module", [v1alpha1, v1], ids=["v1alpha1", "v1"])


def _number(number: int, value: int) -> bytes:
    return _varint(number << 3 | VARINT) + _varint(value)


@pytest.mark.parametrize(("module", "package"), [(v1alpha1, "v1alpha1"), (v1, "v1")])
def test_messages_have_exactly_the_documented_fields(module, package):
    assert module.DESCRIPTOR.package == package
    source = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(source)
    assert source.syntax == "proto3"
    assert {name: _fields(m) for name, m in module.DESCRIPTOR.message_types_by_name.items()} == FIELDS
    assert dict(module.HealthStatus.items()) == {"UNKNOWN": 0, "HEALTHY": 1, "UNHEALTHY": 2}


@BOTH
def test_device_health_matches_hand_built_bytes(module):
    response = module.NodeWatchResourcesResponse(
        devices=[
            module.DeviceHealth(
                device=module.DeviceIdentifier(pool_name="gpus/w1", device_name="gpu-0000-17-00-0"),
                health=module.UNHEALTHY,
                last_updated_time=1_800_000_000,
                health_check_timeout_seconds=30,
                message="GPU is lost",
            )
        ]
    )
    device = (
        _field(1, _field(1, "gpus/w1") + _field(2, "gpu-0000-17-00-0"))
        + _number(2, 2)
        + _number(3, 1_800_000_000)
        + _number(4, 30)
        + _field(5, "GPU is lost")
    )
    assert response.SerializeToString() == _field(1, device)


@BOTH
def test_a_healthy_device_without_message_sends_neither_zero_nor_empty_fields(module):
    healthy = module.DeviceHealth(
        device=module.DeviceIdentifier(pool_name="p", device_name="d"), health=module.HEALTHY
    )
    assert healthy.SerializeToString() == _field(1, _field(1, "p") + _field(2, "d")) + _number(2, 1)


def _v1alpha1_of_1_34() -> Any:
    """The 1.34 kubelet's DeviceHealth: fields 1-3 only (no timeout, no message), built apart."""
    source = descriptor_pb2.FileDescriptorProto()
    v1alpha1.DESCRIPTOR.CopyToProto(source)
    source.name, source.package = "health_1_34.proto", "health134"
    device = next(m for m in source.message_type if m.name == "DeviceHealth")
    kept = [f for f in device.field if f.number <= 3]
    del device.field[:]
    device.field.extend(kept)
    for message in source.message_type:  # fully qualified type names follow the package
        for field in message.field:
            if field.HasField("type_name"):
                field.type_name = field.type_name.replace(".v1alpha1.", ".health134.")
    del source.service[:]
    pool = descriptor_pool.DescriptorPool()
    pool.Add(source)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("health134.DeviceHealth"))


def test_a_kubelet_that_knows_only_fields_1_to_3_still_reads_them():
    old = _v1alpha1_of_1_34()
    wire = v1alpha1.DeviceHealth(
        device=v1alpha1.DeviceIdentifier(pool_name="p", device_name="d"),
        health=v1alpha1.UNHEALTHY,
        last_updated_time=7,
        health_check_timeout_seconds=30,
        message="lost",
    ).SerializeToString()
    decoded = old.FromString(wire)
    assert (decoded.device.pool_name, decoded.device.device_name, decoded.health) == ("p", "d", 2)
    assert decoded.last_updated_time == 7
    assert [f.name for f in old.DESCRIPTOR.fields] == ["device", "health", "last_updated_time"]


def test_service_and_method_names_are_the_kubelets():
    for module, name in ((v1alpha1, "/v1alpha1.DRAResourceHealth"), (v1, "/v1.DRAResourceHealth")):
        service = module.DESCRIPTOR.services_by_name["DRAResourceHealth"]
        assert [f"/{service.full_name}/{m.name}" for m in service.methods] == [f"{name}/NodeWatchResources"]
        method = service.methods[0]
        assert (method.client_streaming, method.server_streaming) == (False, True)
