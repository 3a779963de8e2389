# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO passthrough through the real prepare pipeline on a simulated node whose kernel really moves
drivers: a whole card for a virtual machine, asked for by a VFIOConfig or by the Pod's annotation,
and given back at unprepare."""

from __future__ import annotations

from deckhouse_gpu.adapters.files.device_metadata_files import FileDeviceMetadata
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.ports.kube import EVENTS, RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.vfio_release import NOT_BACK
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.prepare_world import PLUGIN_DIR, allocate
from testkit.vfio_world import VFIO_DEVICE_CONFIG, allocate_vfio, reserve_for_pod
from tests.services.prepare.vfio_world_helpers import (
    A30,
    A100,
    VM_ANNOTATION,
    WHOLE_A30,
    WHOLE_A100,
    drivers,
    entries,
    ledger,
    node,
    payload,
    prepare,
    ref,
    spec,
    untouched,
)

__all__ = ["node"]  # the fixture


class Modes:
    def __init__(self) -> None:
        self.seen: list[dict[str, str | None]] = []

    def follow_modes(self, modes):
        self.seen.append(dict(modes))


def test_a_vfio_config_passes_the_whole_group_through_and_unprepare_gives_it_back(node):
    claim = allocate_vfio(node.world.api, "vm-1", WHOLE_A100)
    modes = Modes()
    service = node.service(offers=modes)
    result = prepare(service, claim)
    uid = ref(claim).uid
    assert result.error == ""
    assert [d.device_name for d in result.devices] == [WHOLE_A100]
    assert drivers(node, A100) == ("vfio-pci", "vfio-pci")
    assert drivers(node, A30) == ("nvidia", "snd_hda_intel")  # the other card is not touched
    assert node.world.nvml.device_addresses() == [A30]
    group = node.groups[A100]
    assert node.events == [
        ("unbind", A100),
        ("bind", A100),
        ("unbind", node.audio(A100)),
        ("bind", node.audio(A100)),
    ]
    entry = entries(node)[uid]
    assert entry["state"] == "PrepareCompleted"
    assert entry["devices"][0]["vfio"] is True
    assert [(r["function"], r["originalDriver"]) for r in entry["vfio"]] == [
        (A100, "nvidia"),
        (node.audio(A100), "snd_hda_intel"),
    ]
    assert ledger(node) == [A100, node.audio(A100)]
    found = spec(node, uid)
    assert found is not None
    assert validate_spec(found) == []
    assert "containerEdits" not in found  # nothing of the nvidia driver in a VM's container
    edits = found["devices"][0]["containerEdits"]
    assert [n["path"] for n in edits["deviceNodes"]] == ["/dev/vfio/vfio", f"/dev/vfio/{group}"]
    assert edits["mounts"][0]["hostPath"] == f"{PLUGIN_DIR}/vfio-payload/{uid}.json"
    assert edits["mounts"][0]["containerPath"] == "/var/run/gpu.deckhouse.io/vfio/vm-1.json"
    assert modes.seen[-1] == {A100: "VFIO"}

    assert service.unprepare([ref(claim)]) == {uid: ""}
    assert untouched(node)
    assert payload(node, uid) is None
    assert spec(node, uid) is None
    assert modes.seen[-1] == {}
    assert not (node.root / f"dev/vfio/{group}").exists()


def test_the_offers_know_the_card_is_a_vfio_claims_before_it_leaves_nvidia(node):
    """A pass of the handler loop between the unbind and the end of the prepare call saw NVML lose
    the card while nothing said a VFIO claim held it, tainted it GPULost NoExecute, and the device
    taint controller evicted the virtual machine's Pod (seen with a real kubelet on 1.35)."""
    uevents_then: list[tuple[int, dict[str, str | None]]] = []

    class Watching:
        def follow_modes(self, modes):
            uevents_then.append((len(node.events), dict(modes)))

    claim = allocate_vfio(node.world.api, "vm-early", WHOLE_A100)
    assert prepare(node.service(offers=Watching()), claim).error == ""
    assert ("unbind", A100) in node.events
    first_vfio = next(seen for seen, modes in uevents_then if modes.get(A100) == "VFIO")
    assert first_vfio <= node.events.index(("unbind", A100))


def test_the_vm_modules_vfio_device_config_passes_the_card_through_as_a_vfio_config_does(node):
    # resource.gpu.deckhouse.io/v1alpha1 VfioDeviceConfig, as deckhouse/virtualization writes it.
    claim = allocate_vfio(node.world.api, "vm-canonical", WHOLE_A100, parameters=VFIO_DEVICE_CONFIG)
    result = prepare(node.service(), claim)
    assert result.error == ""
    assert drivers(node, A100) == ("vfio-pci", "vfio-pci")
    assert entries(node)[ref(claim).uid]["devices"][0]["vfio"] is True
    assert node.service().unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert untouched(node)


def test_the_pods_annotation_passes_the_card_through_and_the_payload_names_the_pod(node):
    claim = allocate(node.world.api, "vm-2", WHOLE_A30)
    claim = reserve_for_pod(node.world, claim, "virt-launcher-vm-2-abcde", VM_ANNOTATION)
    result = prepare(node.service(), claim)
    assert result.error == ""
    assert drivers(node, A30) == ("vfio-pci", "vfio-pci")
    document = payload(node, ref(claim).uid)
    assert document is not None
    assert document["pod"]["name"] == "virt-launcher-vm-2-abcde"
    assert document["claim"]["name"] == "vm-2"
    (device,) = document["devices"]
    assert (device["name"], device["iommuGroup"], device["memoryMiB"]) == (WHOLE_A30, node.groups[A30], 24576)
    assert [f["originalDriver"] for f in device["functions"]] == ["nvidia", "snd_hda_intel"]


def test_without_the_annotation_or_a_vfio_config_the_card_stays_on_nvidia(node):
    claim = allocate(node.world.api, "pod", WHOLE_A30)
    claim = reserve_for_pod(node.world, claim, "plain", {"gpu.deckhouse.io/vfio": "false"})
    assert prepare(node.service(), claim).error == ""
    assert drivers(node, A30) == ("nvidia", "snd_hda_intel")
    found = spec(node, ref(claim).uid)
    assert found is not None
    assert "/dev/nvidia1" in str(found)
    assert payload(node, ref(claim).uid) is None


def test_a_pod_replaced_under_its_name_does_not_pass_the_card_through(node):
    """The claim was reserved for another Pod of that name: its annotation is not this Pod's."""
    claim = reserve_for_pod(node.world, allocate(node.world.api, "vm-old", WHOLE_A30), "vm", VM_ANNOTATION)
    claim["status"]["reservedFor"][0]["uid"] = "the-pod-that-was"
    patch = {"status": claim["status"]}
    node.world.api.patch(RESOURCE_CLAIMS, "vm-old", patch, subresource="status", namespace="ns")
    assert prepare(node.service(), claim).error == ""
    assert drivers(node, A30) == ("nvidia", "snd_hda_intel")


def test_the_metadata_file_gives_kubevirt_the_pci_bus_id(node):
    claim = allocate_vfio(node.world.api, "vm-3", WHOLE_A100)
    metadata = FileDeviceMetadata(node.world.root / "plugin", PLUGIN_DIR)
    assert prepare(node.service(metadata=metadata), claim).error == ""
    text = (node.world.root / "plugin/dra-device-metadata" / ref(claim).uid / "gpu/metadata.json").read_text()
    assert '"resource.kubernetes.io/pciBusID": {\n' in text
    assert f'"string": "{A100}"' in text
    edits = spec(node, ref(claim).uid)["devices"][0]["containerEdits"]  # type: ignore[index]
    assert [m["containerPath"] for m in edits["mounts"]] == [
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-3/gpu/gpu.deckhouse.io-metadata.json",
        "/var/run/gpu.deckhouse.io/vfio/vm-3.json",
    ]


def test_a_repeated_prepare_changes_nothing_and_unprepare_twice_is_fine(node):
    claim = allocate_vfio(node.world.api, "vm-4", WHOLE_A100)
    service = node.service()
    first = prepare(service, claim)
    assert prepare(service, claim) == first
    assert len(node.events) == 4
    assert service.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert service.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert untouched(node)


def test_a_card_that_does_not_come_back_is_said_in_an_event(node):
    claim = allocate_vfio(node.world.api, "vm-5", WHOLE_A100)
    service = node.service()
    assert prepare(service, claim).error == ""
    service.vfio.host.nvml = None  # the driver takes the card, NVML never sees it
    assert service.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert drivers(node, A100) == ("nvidia", "snd_hda_intel")
    (event,) = [e for e in node.world.api.list(EVENTS, namespace="default").items if e["reason"] == NOT_BACK]
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "PhysicalGPU"
    assert "NVML does not see it after 0.5 s: it is not offered until it does" in event["message"]


def test_an_administrators_vfio_card_serves_a_vfio_claim_without_nvml_and_stays_on_vfio_pci(node):
    host = HostBuilder(node.root)
    for address in (A30, node.audio(A30)):
        host.bind_driver(address, "vfio-pci")
    node.world.nvml.remove_card(A30)  # NVML sees cards on nvidia only
    plain = allocate(node.world.api, "pod", WHOLE_A30)
    refused = prepare(node.service(), plain)
    assert refused.error.startswith(
        "card 0000:5e:00.0 is bound to vfio-pci, not nvidia: it serves VFIO claims only"
    )
    claim = allocate_vfio(node.world.api, "vm-6", WHOLE_A30)
    service = node.service()
    assert prepare(service, claim).error == ""
    assert entries(node)[ref(claim).uid]["vfio"] == []  # nothing moved: nothing to give back
    assert payload(node, ref(claim).uid)["devices"][0]["functions"][0]["originalDriver"] == "vfio-pci"  # type: ignore[index]
    assert service.unprepare([ref(claim)]) == {ref(claim).uid: ""}
    assert drivers(node, A30) == ("vfio-pci", "vfio-pci")
    assert node.events == []


def test_start_gives_back_what_no_entry_owns(node):
    claim = allocate_vfio(node.world.api, "vm-7", WHOLE_A100)
    assert prepare(node.service(), claim).error == ""
    node.world.checkpoint_path.unlink()  # the checkpoint set aside by a person resetting the node
    node.service().start()
    assert untouched(node)
    assert payload(node, ref(claim).uid) is None
