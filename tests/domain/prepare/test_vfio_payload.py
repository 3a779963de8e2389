# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a virtual machine's container gets for a card passed through: the QEMU hook payload, its
VFIO device nodes, a CDI spec without the nvidia driver, and the checkpoint records of the moves."""

from __future__ import annotations

import json

import pytest

from deckhouse_gpu.domain.prepare.checkpoint import (
    Checkpoint,
    ClaimEntry,
    CorruptCheckpoint,
    checksum,
    decode,
    encode,
)
from deckhouse_gpu.domain.prepare.container.cdi_spec import CardNode, ClaimDevice, DeviceNode, claim_spec
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import CardGroup, PciFunction, PodRef, VfioRecord
from deckhouse_gpu.domain.prepare.vfio_payload import (
    API_VERSION,
    KIND,
    container_path,
    device_edits,
    payload,
)
from deckhouse_gpu.domain.prepare.vfio_payload import (
    encode as encode_payload,
)
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from testkit.gpu_objects import ready_card
from tests.domain.prepare.test_cdi_spec import driver_files

CARD = "0000:3b:00.0"
UID = "a16c3f55-3c2e-4a53-9a53-2b0b1a6c9f10"
BOOT = "7d3c1b2a-0000-4000-8000-000000000001"
GPU = PciFunction(CARD, "030200", "10de", "20f1", "nvidia", 1, "pci0000:3a")
AUDIO = PciFunction("0000:3b:00.1", "040300", "10de", "10f8", "snd_hda_intel", 1, "pci0000:3a")
BRIDGE = PciFunction("0000:3a:00.0", "060400", "8086", "2030", "pcieport")
GROUP = CardGroup(CARD, 12, (BRIDGE, GPU, AUDIO))
PLAN = DevicePlan("gpu", "gpus/w1", "gpu-0000-3b-00-0", CARD, "Physical", vfio=True)
CLAIM = {"metadata": {"namespace": "vms", "name": "vm-1-gpu", "uid": UID}}
POD = PodRef("vms", "virt-launcher-vm-1-x7k2p", "pod-uid")


def test_the_payload_names_claim_pod_card_and_every_function_moved():
    document = payload(CLAIM, POD, "w1", [PLAN], {CARD: GROUP}, [ready_card("w1", CARD, "a100-40gb")])
    assert (document["apiVersion"], document["kind"], document["node"]) == (API_VERSION, KIND, "w1")
    assert document["claim"] == {"namespace": "vms", "name": "vm-1-gpu", "uid": UID}
    assert document["pod"] == {"namespace": "vms", "name": "virt-launcher-vm-1-x7k2p", "uid": "pod-uid"}
    (device,) = document["devices"]
    assert device["model"] == "a100-pcie-40gb"
    assert (device["productName"], device["memoryMiB"]) == ("NVIDIA A100-PCIE-40GB", 40960)
    assert (device["name"], device["pciAddress"], device["iommuGroup"]) == (PLAN.device, CARD, 12)
    assert [f["pciAddress"] for f in device["functions"]] == [CARD, AUDIO.address]  # the bridge stays
    assert device["functions"][1] == {
        "pciAddress": "0000:3b:00.1", "class": "040300", "vendorID": "10de", "deviceID": "10f8",
        "originalDriver": "snd_hda_intel", "iommuGroup": 12, "numaNode": 1, "pcieRoot": "pci0000:3a",
    }  # fmt: skip
    assert json.loads(encode_payload(document)) == document


def test_the_payload_leaves_out_devices_not_passed_through_and_a_missing_pod():
    whole = DevicePlan("other", "gpus/w1", "gpu-0000-17-00-0", "0000:17:00.0", "Physical")
    document = payload(CLAIM, None, "w1", [PLAN, whole], {CARD: GROUP}, [])
    assert document["pod"] is None
    assert [d["name"] for d in document["devices"]] == [PLAN.device]
    assert document["devices"][0]["model"] is None  # the card's object is gone: nothing invented


def test_vfio_devices_get_their_nodes_and_no_nvidia_driver():
    edits = device_edits(
        DeviceNode("/dev/vfio/vfio", 10, 196),
        DeviceNode("/dev/vfio/12"),
        "/host/p.json",
        container_path(CLAIM),
    )
    assert edits["deviceNodes"] == [
        {"path": "/dev/vfio/vfio", "type": "c", "major": 10, "minor": 196},
        {"path": "/dev/vfio/12"},
    ]
    assert edits["mounts"] == [
        {"hostPath": "/host/p.json", "containerPath": "/var/run/gpu.deckhouse.io/vfio/vm-1-gpu.json",
         "options": ["ro", "bind"]}
    ]  # fmt: skip
    spec = claim_spec(None, UID, [ClaimDevice(PLAN.device, None, None, edits)])
    assert validate_spec(spec) == []
    assert "containerEdits" not in spec  # no driver files, hooks or NVIDIA_VISIBLE_DEVICES
    assert spec["devices"][0]["containerEdits"] == edits


def test_a_claim_with_a_vm_card_and_a_pod_card_keeps_the_driver_for_the_pod_card():
    edits = device_edits(DeviceNode("/dev/vfio/vfio"), DeviceNode("/dev/vfio/12"), "/p", "/c")
    devices = [
        ClaimDevice(PLAN.device, None, None, edits),
        ClaimDevice("gpu-0000-17-00-0", CardNode("0000:17:00.0", 0)),
    ]
    spec = claim_spec(driver_files(), UID, devices)
    assert validate_spec(spec) == []
    assert "NVIDIA_VISIBLE_DEVICES=void" in spec["containerEdits"]["env"]
    vm, pod = (d["containerEdits"]["deviceNodes"] for d in spec["devices"])
    assert [n["path"] for n in vm] == ["/dev/vfio/vfio", "/dev/vfio/12"]
    assert [n["path"] for n in pod] == ["/dev/nvidia0"]
    with pytest.raises(ValueError, match="the driver's files are needed"):
        claim_spec(None, UID, devices)


def entry() -> ClaimEntry:
    started = ClaimEntry(UID, "vms", "vm-1-gpu", "PrepareStarted", (PLAN,))
    first = started.with_vfio(VfioRecord(CARD, CARD, "nvidia", 12))
    return first.with_vfio(VfioRecord(CARD, AUDIO.address, "snd_hda_intel", 12))


def test_the_checkpoint_keeps_each_move_and_the_device_s_vfio_mark():
    checkpoint = Checkpoint(BOOT).with_entry(entry())
    decoded = decode(encode(checkpoint), BOOT).checkpoint
    assert decoded == checkpoint
    assert decoded.claims[UID].devices[0].vfio is True
    assert decoded.owned_vfio() == {CARD, AUDIO.address}
    document = json.loads(encode(checkpoint))["claims"][UID]
    assert document["vfio"][0] == {
        "card": CARD,
        "function": CARD,
        "originalDriver": "nvidia",
        "iommuGroup": 12,
    }
    assert document["devices"][0]["vfio"] is True


def test_a_move_recorded_twice_keeps_its_first_driver_and_is_dropped_once_given_back():
    twice = entry().with_vfio(VfioRecord(CARD, CARD, "vfio-pci", 12))
    assert [r.driver for r in twice.vfio] == ["nvidia", "snd_hda_intel"]
    assert [r.function for r in twice.without_vfio(CARD).vfio] == [AUDIO.address]
    unbound = ClaimEntry(UID, "vms", "n", "PrepareStarted", ()).with_vfio(VfioRecord(CARD, CARD, None, 12))
    assert decode(encode(Checkpoint(BOOT).with_entry(unbound)), BOOT).checkpoint.claims[UID] == unbound


def test_a_file_written_before_vfio_existed_moved_nothing():
    document = json.loads(encode(Checkpoint(BOOT).with_entry(entry())))
    del document["claims"][UID]["vfio"]
    del document["claims"][UID]["devices"][0]["vfio"]
    document["checksum"] = checksum(document)
    found = decode(json.dumps(document).encode(), BOOT).checkpoint.claims[UID]
    assert found.vfio == ()
    assert found.devices[0].vfio is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda e: e.update(vfio={"function": "x"}), "vfio: expected a list, got dict"),
        (lambda e: e["vfio"][0].pop("function"), "vfio[0].function: missing"),
        (lambda e: e["vfio"][0].update(iommuGroup="12"), "vfio[0].iommuGroup: expected an integer, got str"),
        (lambda e: e["devices"][0].update(vfio="yes"), "devices[0].vfio: expected a boolean, got str"),
    ],
)
def test_a_broken_vfio_record_makes_the_file_corrupt(change, reason):
    document = json.loads(encode(Checkpoint(BOOT).with_entry(entry())))
    change(document["claims"][UID])
    document["checksum"] = checksum(document)
    with pytest.raises(CorruptCheckpoint, match=reason.replace("[", r"\[").replace("]", r"\]")):
        decode(json.dumps(document).encode(), BOOT)
