# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller keeps a DeviceClass of the same name for each GPUClass, against the
in-memory API server: created, updated in place, put back when edited by hand, deleted with the
class; a DeviceClass it does not own is never touched; the Ready condition says why."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.cmd.gpu_dra_controller.run import RunningDraController, start_dra_controller
from deckhouse_gpu.domain.gpuclass import status
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, GPU_CLASSES
from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES, NotFound
from deckhouse_gpu.services.allocation.dra_controller import DraControllerSettings
from deckhouse_gpu.services.allocation.gpuclass_controller import GpuClassSettings
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards
from testkit.waiting import wait_for

SETTINGS = DraControllerSettings(audit_interval_seconds=3600, watch_timeout_seconds=2)
CLASS_SETTINGS = GpuClassSettings(
    debounce_seconds=0.01,
    inventory_debounce_seconds=0.05,
    watch_timeout_seconds=2,
    backoff_initial_seconds=0.05,
    backoff_max_seconds=0.2,
)
VFIO_CONFIG = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "VfioDeviceConfig"}


def gpu_class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "GPUClass",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    for node, labels in (("w1", {"pool": "vm"}), ("w2", {"pool": "ml"})):
        kube.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}})
    cards = node_cards("w1", "a30", 2) + node_cards("w2", "h100-80gb", 1)
    for item in render_nodes(cards, 35, {}, True, True):
        kube.create(RESOURCE_SLICES, item)
    return kube


@pytest.fixture
def running(kube: MemoryKube) -> Iterator[RunningDraController]:
    stop = threading.Event()
    controller = start_dra_controller(
        kube, stop, leader_elect=False, settings=SETTINGS, class_settings=CLASS_SETTINGS
    )
    wait_for(controller.gpu_classes.synced)
    yield controller
    stop.set()
    controller.shutdown()


def ready(kube: MemoryKube, name: str) -> dict[str, Any] | None:
    try:
        found = kube.get(GPU_CLASSES, name)
    except NotFound:
        return None
    for condition in (found.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready" and condition.get("observedGeneration") == found["metadata"].get(
            "generation"
        ):
            return dict(condition)
    return None


def wait_ready(kube: MemoryKube, name: str, reason: str) -> dict[str, Any]:
    wait_for(lambda: (ready(kube, name) or {}).get("reason") == reason, timeout=10)
    found = ready(kube, name)
    assert found is not None
    return found


def device_class(kube: MemoryKube, name: str) -> dict[str, Any] | None:
    try:
        return kube.get(DEVICE_CLASSES, name)
    except NotFound:
        return None


def test_a_vfio_class_becomes_ready_with_its_device_class(
    kube: MemoryKube, running: RunningDraController
) -> None:
    created = kube.create(
        GPU_CLASSES,
        gpu_class("a30-vm", {"deviceKind": "Whole", "vfio": True, "cards": {"models": ["a30-pcie"]}}),
    )
    condition = wait_ready(kube, "a30-vm", status.DEVICE_CLASS_READY)
    assert condition["status"] == "True"
    assert condition["message"] == "DeviceClass a30-vm selects 2 devices on 1 nodes"
    made = device_class(kube, "a30-vm")
    assert made is not None
    assert made["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "gpu.deckhouse.io/v1alpha1",
            "kind": "GPUClass",
            "name": "a30-vm",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert made["spec"]["config"] == [{"opaque": {"driver": "gpu.deckhouse.io", "parameters": VFIO_CONFIG}}]
    stored = kube.get(GPU_CLASSES, "a30-vm")["status"]
    assert (stored["devices"], stored["nodes"], stored["selects"]) == (
        2,
        1,
        "whole card for VMs, of a30-pcie",
    )


def test_a_change_updates_the_device_class_in_place(kube: MemoryKube, running: RunningDraController) -> None:
    kube.create(
        GPU_CLASSES, gpu_class("big", {"deviceKind": "Whole", "extendedResourceName": "gpu.deckhouse.io/big"})
    )
    wait_ready(kube, "big", status.DEVICE_CLASS_READY)
    before = device_class(kube, "big")
    assert before is not None
    assert before["spec"]["extendedResourceName"] == "gpu.deckhouse.io/big"
    kube.patch(GPU_CLASSES, "big", {"spec": {"cards": {"minMemory": "40Gi"}, "extendedResourceName": None}})
    wait_for(
        lambda: (ready(kube, "big") or {}).get("message", "").endswith("selects 1 devices on 1 nodes"),
        timeout=10,
    )
    after = device_class(kube, "big")
    assert after is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]  # the same object, not a new one
    assert "extendedResourceName" not in after["spec"]
    assert 'memory.compareTo(quantity("40Gi")) >= 0' in after["spec"]["selectors"][0]["cel"]["expression"]


def test_a_device_class_edited_or_deleted_by_hand_is_put_back(
    kube: MemoryKube, running: RunningDraController
) -> None:
    kube.create(GPU_CLASSES, gpu_class("mig", {"deviceKind": "MIG", "migProfile": "1g.6gb"}))
    wait_ready(kube, "mig", status.DEVICE_CLASS_READY)
    kept = device_class(kube, "mig")
    assert kept is not None
    kube.patch(DEVICE_CLASSES, "mig", {"spec": {"selectors": [{"cel": {"expression": "true"}}]}})
    wait_for(lambda: (device_class(kube, "mig") or {}).get("spec") == kept["spec"], timeout=10)
    kube.delete(DEVICE_CLASSES, "mig")
    wait_for(lambda: (device_class(kube, "mig") or {}).get("spec") == kept["spec"], timeout=10)


def test_a_device_class_it_does_not_own_is_never_overwritten(
    kube: MemoryKube, running: RunningDraController
) -> None:
    mine = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu-a30"},
        "spec": {"selectors": [{"cel": {"expression": "true"}}]},
    }
    kube.create(DEVICE_CLASSES, mine)
    kube.create(GPU_CLASSES, gpu_class("gpu-a30", {"deviceKind": "Whole"}))
    condition = wait_ready(kube, "gpu-a30", status.DEVICE_CLASS_NAME_TAKEN)
    assert condition["status"] == "False"
    assert "is not this GPUClass's" in condition["message"]
    left = device_class(kube, "gpu-a30")
    assert left is not None
    assert left["spec"] == mine["spec"]
    assert "ownerReferences" not in left["metadata"]
    # Once the administrator deletes it, the name is free and the class takes it.
    kube.delete(DEVICE_CLASSES, "gpu-a30")
    wait_ready(kube, "gpu-a30", status.DEVICE_CLASS_READY)


def test_no_matching_card_is_ready_and_says_so(kube: MemoryKube, running: RunningDraController) -> None:
    kube.create(GPU_CLASSES, gpu_class("l40s", {"deviceKind": "Whole", "cards": {"models": ["l40s"]}}))
    condition = wait_ready(kube, "l40s", status.NO_MATCHING_DEVICES)
    assert condition["status"] == "True"
    assert "no device published in the cluster matches it now" in condition["message"]
    assert device_class(kube, "l40s") is not None


def test_an_invalid_spec_is_not_ready_and_writes_nothing(
    kube: MemoryKube, running: RunningDraController
) -> None:
    # The in-memory server does not run the CRD's CEL rules; the controller checks them again.
    kube.create(GPU_CLASSES, gpu_class("bad", {"deviceKind": "MIG", "vfio": True}))
    condition = wait_ready(kube, "bad", status.INVALID_SPEC)
    assert condition["status"] == "False"
    assert "spec.migProfile: required with deviceKind MIG" in condition["message"]
    assert "spec.vfio: a virtual machine gets a whole card" in condition["message"]
    assert device_class(kube, "bad") is None


def test_a_class_not_ready_is_logged_at_info_without_crashing_the_reconcile(
    kube: MemoryKube, running: RunningDraController, caplog: pytest.LogCaptureFixture
) -> None:
    """Components log at info in production: a log field named like a LogRecord attribute
    ("message") made every not-Ready class's reconcile raise after its status was written."""
    caplog.set_level("INFO", logger="deckhouse_gpu.services.allocation.gpuclass_controller")
    kube.create(GPU_CLASSES, gpu_class("bad-logged", {"deviceKind": "MIG"}))
    wait_ready(kube, "bad-logged", status.INVALID_SPEC)
    wait_for(lambda: any(r.getMessage() == "GPUClass not ready" for r in caplog.records), 5, "logged")
    logged = next(r for r in caplog.records if r.getMessage() == "GPUClass not ready")
    assert logged.__dict__["reason"] == status.INVALID_SPEC
    assert "spec.migProfile: required with deviceKind MIG" in logged.__dict__["detail"]
    assert not [r for r in caplog.records if r.getMessage() == "GPUClass reconcile crashed"]


def test_an_extended_resource_name_belongs_to_the_oldest_class(
    kube: MemoryKube, running: RunningDraController
) -> None:
    kube.create(
        GPU_CLASSES,
        gpu_class("first", {"deviceKind": "Whole", "extendedResourceName": "gpu.deckhouse.io/gpu"}),
    )
    wait_ready(kube, "first", status.DEVICE_CLASS_READY)
    kube.create(
        GPU_CLASSES,
        gpu_class("second", {"deviceKind": "Whole", "extendedResourceName": "gpu.deckhouse.io/gpu"}),
    )
    condition = wait_ready(kube, "second", status.EXTENDED_RESOURCE_NAME_TAKEN)
    assert "belongs to DeviceClass first" in condition["message"]
    assert device_class(kube, "second") is None


def test_deleting_the_class_deletes_its_device_class(kube: MemoryKube, running: RunningDraController) -> None:
    kube.create(
        GPU_CLASSES,
        gpu_class("gone", {"deviceKind": "Share", "sharing": {"strategy": "MPS", "sharePercent": 50}}),
    )
    wait_ready(kube, "gone", status.NO_MATCHING_DEVICES)  # no node of this cluster shares its cards
    made = device_class(kube, "gone")
    assert made is not None
    assert made["spec"]["config"][0]["opaque"]["parameters"] == {
        "apiVersion": "resource.gpu.deckhouse.io/v1alpha1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 50}},
    }
    kube.delete(GPU_CLASSES, "gone")
    wait_for(lambda: device_class(kube, "gone") is None, timeout=10)


def test_deleting_without_a_garbage_collector_still_deletes_the_device_class(
    running: RunningDraController, kube: MemoryKube
) -> None:
    # Owned by a GPUClass that no longer exists, and no collector came: the controller deletes it.
    orphan = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": "orphan",
            "ownerReferences": [
                {
                    "apiVersion": "gpu.deckhouse.io/v1alpha1",
                    "kind": "GPUClass",
                    "name": "orphan",
                    "uid": "gone",
                    "controller": True,
                }
            ],
        },
        "spec": {"selectors": [{"cel": {"expression": "true"}}]},
    }
    kube.create(DEVICE_CLASSES, orphan)
    wait_for(lambda: device_class(kube, "orphan") is None, timeout=10)


def test_a_node_selector_picks_the_cards_of_its_nodes(
    kube: MemoryKube, running: RunningDraController
) -> None:
    kube.create(
        GPU_CLASSES,
        gpu_class(
            "vm-nodes", {"deviceKind": "Whole", "cards": {"nodeSelector": {"matchLabels": {"pool": "vm"}}}}
        ),
    )
    condition = wait_ready(kube, "vm-nodes", status.DEVICE_CLASS_READY)
    assert condition["message"] == "DeviceClass vm-nodes selects 2 devices on 1 nodes"
    # Relabelled: the class follows the node.
    kube.patch(NODES, "w2", {"metadata": {"labels": {"pool": "vm"}}})
    wait_for(
        lambda: (
            (ready(kube, "vm-nodes") or {}).get("message")
            == "DeviceClass vm-nodes selects 3 devices on 2 nodes"
        ),
        timeout=10,
    )


def conflict(kube: MemoryKube, name: str) -> tuple[str, str, str] | None:
    found = kube.get(GPU_CLASSES, name)
    for condition in (found.get("status") or {}).get("conditions") or []:
        if condition["type"] == status.DEVICE_PLUGIN_CONFLICT:
            return condition["status"], condition["reason"], condition["message"]
    return None


def test_a_resource_a_device_plugin_serves_where_the_class_has_devices_is_said(
    kube: MemoryKube, running: RunningDraController
) -> None:
    # w1 publishes the class's A30s and its kubelet also has a device plugin's example.com/gpu: the
    # scheduler gives Pods asking for it there the plugin's devices (KUBERNETES-FACTS.md F5, DESIGN.md D16).
    kube.patch(NODES, "w1", {"status": {"allocatable": {"example.com/gpu": "2"}}}, subresource="status")
    spec = {
        "deviceKind": "Whole",
        "cards": {"models": ["a30-pcie"]},
        "extendedResourceName": "example.com/gpu",
    }
    kube.create(GPU_CLASSES, gpu_class("a30-pods", spec))
    wait_ready(kube, "a30-pods", status.DEVICE_CLASS_READY)  # the class itself works
    wait_for(lambda: (conflict(kube, "a30-pods") or ("",))[0] == "True", timeout=10)
    found = conflict(kube, "a30-pods")
    assert found is not None
    assert found[1] == status.SERVED_BY_DEVICE_PLUGIN
    assert "example.com/gpu on 1 nodes" in found[2]
    assert "(w1)" in found[2]
    kube.patch(NODES, "w1", {"status": {"allocatable": {"example.com/gpu": "0"}}}, subresource="status")
    wait_for(lambda: (conflict(kube, "a30-pods") or ("",))[0] == "False", timeout=10)
    assert conflict(kube, "a30-pods")[1] == status.NOT_SERVED_BY_DEVICE_PLUGIN  # type: ignore[index]
    # A class without an extended resource has no such condition.
    kube.create(GPU_CLASSES, gpu_class("plain", {"deviceKind": "Whole"}))
    wait_ready(kube, "plain", status.DEVICE_CLASS_READY)
    assert conflict(kube, "plain") is None
