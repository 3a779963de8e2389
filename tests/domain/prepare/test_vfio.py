# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The rules of VFIO passthrough at prepare: which functions move, what is refused and why."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.prepare import vfio
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import CardGroup, PciFunction, PodRef

CARD = "0000:3b:00.0"
GPU = PciFunction(CARD, "030200", "10de", "20f1", "nvidia", 0, "pci0000:3a")
AUDIO = PciFunction("0000:3b:00.1", "040300", "10de", "10f8", "snd_hda_intel", 0, "pci0000:3a")
BRIDGE = PciFunction("0000:3a:00.0", "060400", "8086", "2030", "pcieport")
NIC = PciFunction("0000:3c:00.0", "020000", "15b3", "101b", "mlx5_core")
POD = PodRef("vms", "virt-launcher-vm-1", "uid-1")
WHOLE = DevicePlan("gpu", "gpus/w1", "gpu-0000-3b-00-0", CARD, "Physical")


def group(*functions: PciFunction) -> CardGroup:
    return CardGroup(CARD, 12, functions)


def test_the_card_s_own_functions_move_and_a_bridge_stays_with_its_driver():
    found = group(BRIDGE, GPU, AUDIO)
    assert vfio.to_bind(found) == (GPU, AUDIO)
    assert vfio.foreign(found) == ()
    assert vfio.group_refusals(found, 0, ()) == []


def test_a_foreign_device_in_the_group_is_refused_and_named():
    (problem,) = vfio.group_refusals(group(GPU, AUDIO, NIC), 0, ())
    assert problem.startswith("IOMMU group 12 of card 0000:3b:00.0 also holds 0000:3c:00.0 (class 0200")
    assert "driver mlx5_core" in problem
    assert "a switch port with ACS" in problem


def test_virtual_functions_and_processes_are_refused_with_what_to_do():
    problems = vfio.group_refusals(group(GPU), 4, (4242, 17))
    assert problems == [
        "card 0000:3b:00.0 has 4 SR-IOV virtual functions enabled: disable them first "
        "(echo 0 > /sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs)",
        "processes run on card 0000:3b:00.0 (PIDs 17, 4242): stop them; the kubelet retries the prepare",
    ]


@pytest.mark.parametrize(
    ("bare_metal", "why"), [(False, "says it is a virtual machine"), (None, "is not known")]
)
def test_only_a_node_known_to_be_bare_metal_passes_a_card_through(bare_metal, why):
    status = {"nodeInfo": {"nodeName": "w1", **({} if bare_metal is None else {"bareMetal": bare_metal})}}
    refused = vfio.node_refusal(CARD, status)
    assert refused is not None
    assert f"w1's nodeInfo.bareMetal {why}" in refused
    assert vfio.node_refusal(CARD, {"nodeInfo": {"bareMetal": True}}) is None
    assert vfio.node_refusal(CARD, {}) is not None  # no nodeInfo at all: fail closed


def test_the_annotation_is_refused_on_a_mig_instance_and_on_a_share():
    mig = DevicePlan("gpu", "gpus/w1", "gpu-0000-3b-00-0-mig-1g-5gb-0", CARD, "MIG", None, 19, 0, 1)
    share = DevicePlan("gpu", "gpus/w1", "gpu-0000-3b-00-0", CARD, "Physical", share_id="s-1")
    on_mig, on_share = vfio.annotation_refusal(mig, POD), vfio.annotation_refusal(share, POD)
    assert on_mig is not None
    assert on_mig.startswith('Pod vms/virt-launcher-vm-1 asks for VFIO (gpu.deckhouse.io/vfio: "true")')
    assert "is a MIG instance: passthrough gives whole cards only" in on_mig
    assert on_share is not None
    assert "is a share of a card: passthrough needs a whole card of its own" in on_share
    assert vfio.annotation_refusal(WHOLE, POD) is None


def test_a_card_for_a_vm_is_not_shared():
    plan = DevicePlan("gpu", "p", "d", CARD, "Physical", sharing=MpsPlan(), vfio=True)
    refused = vfio.sharing_refusal(plan)
    assert refused is not None
    assert "asked for VFIO and for MPS sharing at once" in refused
    assert vfio.sharing_refusal(DevicePlan("gpu", "p", "d", CARD, "Physical", sharing=MpsPlan())) is None


def test_the_pods_a_claim_is_reserved_for_and_the_annotation():
    claim = {
        "status": {
            "reservedFor": [
                {"resource": "pods", "name": "a", "uid": "1"},
                {"resource": "statefulsets", "apiGroup": "apps", "name": "s", "uid": "2"},
                "garbage",
            ]
        }
    }
    assert vfio.reserving_pods(claim) == [("a", "1")]
    assert vfio.reserving_pods({}) == []
    assert vfio.asks_for_vfio({"metadata": {"annotations": {vfio.ANNOTATION: "true"}}})
    assert not vfio.asks_for_vfio({"metadata": {"annotations": {vfio.ANNOTATION: "yes"}}})
    assert not vfio.asks_for_vfio({})
    pod = {"metadata": {"namespace": "vms", "name": "virt-launcher-vm-1", "uid": "uid-1"}}
    assert vfio.pod_ref(pod) == POD


def test_a_group_that_changed_between_check_and_bind_is_refused():
    checked = group(GPU, AUDIO)
    assert vfio.changed_refusal(checked, [AUDIO.address, CARD]) is None
    refused = vfio.changed_refusal(checked, [CARD, AUDIO.address, NIC.address])
    assert refused == (
        "IOMMU group 12 of card 0000:3b:00.0 changed between the check and the bind (checked "
        "0000:3b:00.0, 0000:3b:00.1; now 0000:3b:00.0, 0000:3b:00.1, 0000:3c:00.0): nothing was left on "
        "vfio-pci; the kubelet retries the prepare"
    )


def test_a_card_an_administrator_bound_to_vfio_pci_is_prebound():
    assert group(PciFunction(CARD, "030200", "10de", "20f1", "vfio-pci"), AUDIO).prebound
    assert not group(GPU, AUDIO).prebound
    assert not CardGroup(CARD, 12, (AUDIO,)).prebound  # the card itself is not listed: nothing known


def test_functions_of_one_device_share_the_slot():
    assert vfio.same_slot("0000:3b:00.1", CARD)
    assert not vfio.same_slot("0000:3b:01.0", CARD)
    assert not vfio.same_slot("0001:3b:00.0", CARD)


def test_the_hints_say_what_to_change():
    assert "intel_iommu=on iommu=pt" in vfio.no_group_refusal(CARD)
    assert "modprobe vfio-pci" in vfio.no_driver_refusal(CARD)
    assert "it serves VFIO claims only" in vfio.prebound_refusal(WHOLE)
