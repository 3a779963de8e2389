# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The compiled kubelet protos against the wire format of KUBERNETES-FACTS.md F6, byte for byte.

The expected bytes are built by hand from field numbers and wire types, so a renumbered or retyped
field in the .proto files fails here even though both ends of our own tests would still agree.
"""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from deckhouse_gpu.adapters.kubelet_gen import dra_v1_pb2 as v1
from deckhouse_gpu.adapters.kubelet_gen import dra_v1beta1_pb2 as v1beta1
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as reg

VARINT, LENGTH_DELIMITED = 0, 2


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, value: str | bytes | bool) -> bytes:
    if isinstance(value, bool):
        return _varint(number << 3 | VARINT) + _varint(int(value))
    raw = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | LENGTH_DELIMITED) + _varint(len(raw)) + raw


CDI_ID = "gpu.deckhouse.io/gpu=node-a-gpu-0"
DEVICE_V1 = (
    _field(1, "gpu")
    + _field(1, "extra")
    + _field(2, "node-a")
    + _field(3, "gpu-0")
    + _field(4, CDI_ID)
    + _field(5, "share-7")
)


def test_v1_device_with_share_id_matches_hand_built_bytes():
    device = v1.Device(
        request_names=["gpu", "extra"],
        pool_name="node-a",
        device_name="gpu-0",
        cdi_device_ids=[CDI_ID],
        share_id="share-7",
    )
    assert device.SerializeToString() == DEVICE_V1


def test_v1_device_without_share_id_has_no_field_5():
    device = v1.Device(request_names=["gpu"], pool_name="p", device_name="d", share_id=None)
    assert device.SerializeToString() == _field(1, "gpu") + _field(2, "p") + _field(3, "d")
    assert not device.HasField("share_id")


def test_v1_share_id_has_presence_even_when_empty():
    # proto3 "optional": an empty share_id set on purpose still reaches a 1.35 kubelet.
    assert v1.Device(share_id="").SerializeToString() == _field(5, "")


def test_prepare_response_map_entry_keyed_by_claim_uid():
    response = v1.NodePrepareResourcesResponse()
    response.claims["uid-1"].devices.add(pool_name="node-a", device_name="gpu-0", cdi_device_ids=[CDI_ID])
    response.claims["uid-2"].error = "no such device"
    inner_ok = _field(1, _field(2, "node-a") + _field(3, "gpu-0") + _field(4, CDI_ID))
    inner_failed = _field(2, "no such device")
    expected = _field(1, _field(1, "uid-1") + _field(2, inner_ok)) + _field(
        1, _field(1, "uid-2") + _field(2, inner_failed)
    )
    assert response.SerializeToString(deterministic=True) == expected


def test_unprepare_response_map_entry_and_error_field():
    response = v1.NodeUnprepareResourcesResponse(
        claims={"uid-1": v1.NodeUnprepareResourceResponse(error="busy")}
    )
    assert response.SerializeToString() == _field(1, _field(1, "uid-1") + _field(2, _field(1, "busy")))


@pytest.mark.parametrize("module", [v1, v1beta1], ids=["v1", "v1beta1"])
def test_requests_decode_claims_by_number(module):
    claim = _field(1, "team-a") + _field(2, "uid-1") + _field(3, "claim-a")
    for request_type in (module.NodePrepareResourcesRequest, module.NodeUnprepareResourcesRequest):
        request = request_type.FromString(_field(1, claim) + _field(1, _field(2, "uid-2")))
        assert [(c.namespace, c.uid, c.name) for c in request.claims] == [
            ("team-a", "uid-1", "claim-a"),
            ("", "uid-2", ""),
        ]


def test_v1beta1_decodes_a_v1_device_and_ignores_share_id():
    device = v1beta1.Device.FromString(DEVICE_V1)
    assert list(device.request_names) == ["gpu", "extra"]
    assert (device.pool_name, device.device_name, list(device.cdi_device_ids)) == (
        "node-a",
        "gpu-0",
        [CDI_ID],
    )
    assert "share_id" not in device.DESCRIPTOR.fields_by_name


def test_v1beta1_decodes_a_v1_prepare_response():
    response = v1.NodePrepareResourcesResponse()
    response.claims["uid-1"].devices.add(pool_name="p", device_name="d", share_id="s")
    decoded = v1beta1.NodePrepareResourcesResponse.FromString(response.SerializeToString())
    assert decoded.claims["uid-1"].devices[0].device_name == "d"
    assert decoded.claims["uid-1"].error == ""


def test_plugin_info_matches_hand_built_bytes():
    info = reg.PluginInfo(
        type="DRAPlugin",
        name="gpu.deckhouse.io",
        endpoint="/var/lib/kubelet/plugins/gpu.deckhouse.io/dra.sock",
        supported_versions=["v1.DRAPlugin", "v1beta1.DRAPlugin"],
    )
    assert info.SerializeToString() == (
        _field(1, "DRAPlugin")
        + _field(2, "gpu.deckhouse.io")
        + _field(3, "/var/lib/kubelet/plugins/gpu.deckhouse.io/dra.sock")
        + _field(4, "v1.DRAPlugin")
        + _field(4, "v1beta1.DRAPlugin")
    )


def test_registration_status_bool_and_error():
    status = reg.RegistrationStatus.FromString(_field(1, False) + _field(2, "bad endpoint"))
    assert (status.plugin_registered, status.error) == (False, "bad endpoint")
    assert reg.RegistrationStatus(plugin_registered=True).SerializeToString() == _field(1, True)
    assert reg.InfoRequest().SerializeToString() == b""
    assert reg.RegistrationStatusResponse().SerializeToString() == b""


def test_service_and_method_names_are_the_kubelets():
    def methods(module, service: str) -> list[str]:
        found = module.DESCRIPTOR.services_by_name[service]
        return [f"/{found.full_name}/{m.name}" for m in found.methods]

    assert methods(v1, "DRAPlugin") == [
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
    ]
    assert methods(v1beta1, "DRAPlugin") == [
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
    ]
    assert methods(reg, "Registration") == [
        "/pluginregistration.Registration/GetInfo",
        "/pluginregistration.Registration/NotifyRegistrationStatus",
    ]


STRING, BOOL, MESSAGE = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_MESSAGE
# (name, number, type, repeated) per message, exactly KUBERNETES-FACTS.md F6.1 / F6.2; maps are
# repeated entries.
DRA_FIELDS: dict[str, list[tuple[str, int, int, bool]]] = {
    "NodePrepareResourcesRequest": [("claims", 1, MESSAGE, True)],
    "NodePrepareResourcesResponse": [("claims", 1, MESSAGE, True)],
    "NodePrepareResourceResponse": [("devices", 1, MESSAGE, True), ("error", 2, STRING, False)],
    "Device": [
        ("request_names", 1, STRING, True),
        ("pool_name", 2, STRING, False),
        ("device_name", 3, STRING, False),
        ("cdi_device_ids", 4, STRING, True),
    ],
    "NodeUnprepareResourcesRequest": [("claims", 1, MESSAGE, True)],
    "NodeUnprepareResourcesResponse": [("claims", 1, MESSAGE, True)],
    "NodeUnprepareResourceResponse": [("error", 1, STRING, False)],
    "Claim": [("namespace", 1, STRING, False), ("uid", 2, STRING, False), ("name", 3, STRING, False)],
}
REGISTRATION_FIELDS: dict[str, list[tuple[str, int, int, bool]]] = {
    "InfoRequest": [],
    "PluginInfo": [
        ("type", 1, STRING, False),
        ("name", 2, STRING, False),
        ("endpoint", 3, STRING, False),
        ("supported_versions", 4, STRING, True),
    ],
    "RegistrationStatus": [("plugin_registered", 1, BOOL, False), ("error", 2, STRING, False)],
    "RegistrationStatusResponse": [],
}


def _fields(message: Descriptor) -> list[tuple[str, int, int, bool]]:
    return [(f.name, f.number, f.type, f.is_repeated) for f in message.fields]


@pytest.mark.parametrize(
    ("module", "package", "expected"),
    [
        (
            v1,
            "k8s.io.kubelet.pkg.apis.dra.v1",
            {**DRA_FIELDS, "Device": [*DRA_FIELDS["Device"], ("share_id", 5, STRING, False)]},
        ),
        (v1beta1, "k8s.io.kubelet.pkg.apis.dra.v1beta1", DRA_FIELDS),
        (reg, "pluginregistration", REGISTRATION_FIELDS),
    ],
    ids=["v1", "v1beta1", "pluginregistration"],
)
def test_messages_have_exactly_the_documented_fields(module, package, expected):
    assert module.DESCRIPTOR.package == package
    source = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(source)
    assert source.syntax == "proto3"
    assert {name: _fields(m) for name, m in module.DESCRIPTOR.message_types_by_name.items()} == expected


@pytest.mark.parametrize("module", [v1, v1beta1], ids=["v1", "v1beta1"])
def test_claim_maps_are_keyed_by_string(module):
    for response in ("NodePrepareResourcesResponse", "NodeUnprepareResourcesResponse"):
        entry = module.DESCRIPTOR.message_types_by_name[response].fields_by_name["claims"].message_type
        assert entry.GetOptions().map_entry
        assert [(f.name, f.number, f.type) for f in entry.fields] == [
            ("key", 1, STRING),
            ("value", 2, MESSAGE),
        ]


def test_only_v1_share_id_is_optional_with_presence():
    for module in (v1, v1beta1):
        device = module.DESCRIPTOR.message_types_by_name["Device"]
        with_presence = [f.name for f in device.fields if f.has_presence]
        assert with_presence == (["share_id"] if module is v1 else [])
