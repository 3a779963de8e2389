# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from dataclasses import replace

from deckhouse_gpu.domain.inventory.desired import (
    agent_view,
    change_for,
    describe_gpu,
    node_selector,
)
from deckhouse_gpu.domain.inventory.host_facts import HostFacts, node_info
from deckhouse_gpu.domain.inventory.pci import PciDevice
from deckhouse_gpu.domain.inventory.pciids import parse_pci_ids
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import apply_patch
from deckhouse_gpu.simulator.host.gpu_catalog import pci_ids_text

IDS = parse_pci_ids(pci_ids_text(), frozenset({"10de"}))
NODE = node_info("w1", HostFacts(None, "6.8.0", "Supermicro", "X"))
A30 = PciDevice("0000:17:00.0", "030200", "10de", "20b7", "10de", "1532", "nvidia", 30, 0)
OWNER = {"apiVersion": "v1", "kind": "Node", "name": "w1", "uid": "node-uid"}


def test_describe_gpu_fills_names_labels_and_driver():
    gpu = describe_gpu("w1", A30, IDS, NODE)
    assert gpu.name == "w1-0000-17-00-0"
    assert gpu.labels == {
        "gpu.deckhouse.io/node": "w1",
        "gpu.deckhouse.io/vendor": "nvidia",
        "gpu.deckhouse.io/device": "a30-pcie",
    }
    pci = gpu.status["pciInfo"]
    assert pci["class"] == {"code": "0302", "name": "3D controller"}
    assert pci["device"] == {"id": "20b7", "name": "GA100GL [A30 PCIe]"}
    assert pci["subsystem"] == {"vendorID": "10de", "deviceID": "1532", "name": "A30 24GB"}
    assert pci["iommuGroup"] == 30
    assert gpu.status["currentState"] == {"driverType": "Nvidia", "driverName": "nvidia"}
    assert gpu.status["nodeInfo"]["bareMetal"] is True


def test_without_pci_ids_a_known_gpu_keeps_its_name_and_label():
    # A real H200 host had no pci.ids at all: the DeviceClasses written for the model must still match.
    gpu = describe_gpu("w1", A30, None, NODE)
    assert gpu.status["pciInfo"]["device"] == {"id": "20b7", "name": "GA100GL [A30 PCIe]"}
    assert gpu.labels["gpu.deckhouse.io/device"] == "a30-pcie"
    assert "name" not in gpu.status["pciInfo"]["vendor"]  # the fallback names known GPUs only
    h200 = PciDevice("0000:06:00.0", "030200", "10de", "2335", driver="nvidia")
    assert describe_gpu("w1", h200, None, NODE).labels["gpu.deckhouse.io/device"] == "h200-sxm-141gb"


def test_without_pci_ids_an_unknown_gpu_is_named_by_its_ids():
    other = PciDevice("0000:17:00.0", "030200", "10de", "2b00", driver="nvidia")
    gpu = describe_gpu("w1", other, None, NODE)
    assert gpu.status["pciInfo"]["device"] == {"id": "2b00"}
    assert gpu.labels["gpu.deckhouse.io/device"] == "10de-2b00"


def test_the_hosts_pci_ids_wins_over_the_built_in_names():
    ids = parse_pci_ids(
        "10de  NVIDIA Corporation\n\t20b7  GA100GL [A30 PCIe, renamed]\n", frozenset({"10de"})
    )
    assert describe_gpu("w1", A30, ids, NODE).labels["gpu.deckhouse.io/device"] == "a30-pcie-renamed"


def test_unbound_card_has_no_driver_type():
    unbound = PciDevice("0000:17:00.0", "030200", "10de", "20b7")
    assert describe_gpu("w1", unbound, IDS, NODE).status["currentState"] == {}


def stored_object(gpu, **status_extra):
    status = {**gpu.status, **status_extra}
    return {
        "metadata": {
            "name": gpu.name,
            "labels": dict(gpu.labels),
            "ownerReferences": [OWNER],
            "resourceVersion": "7",
        },
        "status": status,
    }


def test_no_change_when_stored_matches_even_with_other_writers_fields():
    gpu = describe_gpu("w1", A30, IDS, NODE)
    handler_state = {**gpu.status["currentState"], "nvidia": {"gpuUUID": "GPU-1"}}
    stored = stored_object(gpu, currentState=handler_state, capabilities={"productName": "NVIDIA A30"})
    stored["status"]["conditions"] = [{"type": "DriverReady", "status": "True"}]
    stored["metadata"]["labels"]["team"] = "ml"
    assert change_for(gpu, stored, OWNER).empty


def test_change_touches_only_agent_fields():
    gpu = describe_gpu("w1", A30, IDS, NODE)
    old = describe_gpu("w1", replace(A30, driver="vfio-pci"), IDS, NODE)
    stored = stored_object(old, currentState={**old.status["currentState"], "nvidia": {"gpuUUID": "GPU-1"}})
    stored["status"]["conditions"] = [{"type": "DriverReady", "status": "True"}]
    change = change_for(gpu, stored, OWNER)
    assert change.metadata == {}
    assert change.status == {"currentState": {"driverType": "Nvidia", "driverName": "nvidia"}}
    patched = apply_patch(stored["status"], change.status)
    assert patched["currentState"]["nvidia"] == {"gpuUUID": "GPU-1"}
    assert patched["conditions"] == stored["status"]["conditions"]
    assert agent_view(patched) == gpu.status


def test_unbinding_removes_driver_fields_but_keeps_handler_state():
    unbound = describe_gpu("w1", replace(A30, driver=None), IDS, NODE)
    bound = describe_gpu("w1", A30, IDS, NODE)
    stored = stored_object(
        bound, currentState={**bound.status["currentState"], "nvidia": {"gpuUUID": "GPU-1"}}
    )
    patched = apply_patch(stored["status"], change_for(unbound, stored).status)
    assert patched["currentState"] == {"nvidia": {"gpuUUID": "GPU-1"}}


def test_changed_label_and_missing_owner_are_patched():
    gpu = describe_gpu("w1", A30, IDS, NODE)
    stored = stored_object(gpu)
    stored["metadata"]["labels"]["gpu.deckhouse.io/device"] = "old"
    stored["metadata"]["ownerReferences"] = []
    change = change_for(gpu, stored, OWNER)
    assert change.metadata == {"labels": {"gpu.deckhouse.io/device": "a30-pcie"}, "ownerReferences": [OWNER]}
    assert change.status == {}


def test_manifest_is_a_complete_object():
    gpu = describe_gpu("w1", A30, IDS, NODE)
    manifest = gpu.manifest(OWNER)
    assert manifest["apiVersion"] == "gpu.deckhouse.io/v1alpha1"
    assert manifest["kind"] == "PhysicalGPU"
    assert manifest["metadata"]["ownerReferences"] == [OWNER]
    assert "ownerReferences" not in gpu.manifest(None)["metadata"]
    assert node_selector("w1") == "gpu.deckhouse.io/node=w1"
