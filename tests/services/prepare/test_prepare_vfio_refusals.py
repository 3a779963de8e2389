# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every check VFIO prepare makes before it touches a card, and the bad input it meets while
binding: each refused with what to fix, every function back on its driver, nothing recorded."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, KubeError
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from testkit.prepare_world import allocate, allocate_share
from testkit.vfio_world import VfioWorld, allocate_vfio, reserve_for_pod, set_bare_metal
from tests.services.prepare.vfio_world_helpers import (
    A100,
    VM_ANNOTATION,
    WHOLE_A30,
    WHOLE_A100,
    drivers,
    entries,
    node,
    prepare,
    untouched,
)

__all__ = ["node"]  # the fixture
NIC = next(model for model in OTHER_DEVICES if model.key == "nic")
BRIDGE = next(model for model in OTHER_DEVICES if model.key == "bridge")


def refused(node: VfioWorld, claim: dict[str, Any], **extra: Any) -> str:
    error = prepare(node.service(**extra), claim).error
    assert error, "the prepare was expected to fail"
    assert untouched(node), "a refused prepare left something behind"
    return error


@pytest.mark.parametrize(
    ("bare_metal", "says"), [(False, "says it is a virtual machine"), (None, "is not known")]
)
def test_a_node_not_known_to_be_bare_metal_is_refused(node, bare_metal, says):
    set_bare_metal(node.world, A100, bare_metal)
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert error == (
        f"card {A100}: VFIO passthrough needs a bare-metal node, and w1's nodeInfo.bareMetal {says} (DMI "
        "names a hypervisor or cannot be read); use a VFIO claim on a bare-metal node"
    )


def test_iommu_off_is_refused(node):
    (node.host.device_dir(A100) / "iommu_group").unlink()
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert error.startswith(f"card {A100} has no IOMMU group: the IOMMU is off; enable VT-d or AMD-Vi")


def test_vfio_pci_not_loaded_is_refused(node):
    (node.host.sys / "bus/pci/drivers/vfio-pci").rmdir()
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert "the vfio-pci driver is not loaded on the node: load it (modprobe vfio-pci" in error


def test_sriov_virtual_functions_are_refused(node):
    node.host.write_device_file(A100, "sriov_numvfs", "2\n")
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert error == (
        f"card {A100} has 2 SR-IOV virtual functions enabled: disable them first "
        f"(echo 0 > /sys/bus/pci/devices/{A100}/sriov_numvfs)"
    )


def test_processes_on_the_card_are_refused_and_named(node):
    node.world.nvml.set_busy(A100, True, (4711, 815))
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert (
        error == f"processes run on card {A100} (PIDs 815, 4711): stop them; the kubelet retries the prepare"
    )


def test_a_foreign_device_in_the_group_is_refused_and_a_bridge_is_not(node):
    node.host.add_function("0000:3a:00.0", BRIDGE, None, node.groups[A100])
    node.host.add_function("0000:3c:00.0", NIC, "mlx5_core", node.groups[A100])
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100))
    assert error.startswith(
        f"IOMMU group {node.groups[A100]} of card {A100} also holds 0000:3c:00.0 (class 0200"
    )
    assert "0000:3a:00.0" not in error  # the bridge stays on its driver and is no reason
    node.host.remove_device("0000:3c:00.0")
    claim = allocate_vfio(node.world.api, "vm-2", WHOLE_A100)
    assert prepare(node.service(), claim).error == ""
    assert node.driver("0000:3a:00.0") is None  # the bridge was not moved


def test_the_annotation_on_a_mig_instance_is_refused(node):
    claim = allocate(node.world.api, "vm", "gpu-0000-3b-00-0-mig-1g-5gb-0")
    claim = reserve_for_pod(node.world, claim, "virt-launcher-vm", VM_ANNOTATION)
    error = refused(node, claim)
    assert error.startswith(
        'Pod ns/virt-launcher-vm asks for VFIO (gpu.deckhouse.io/vfio: "true"), but device'
    )
    assert "is a MIG instance: passthrough gives whole cards only" in error


def test_the_annotation_on_a_share_is_refused(node):
    claim = allocate_share(node.world.api, "vm", WHOLE_A30, "50", None)
    claim = reserve_for_pod(node.world, claim, "virt-launcher-vm", VM_ANNOTATION)
    assert "is a share of a card: passthrough needs a whole card of its own" in refused(node, claim)


def test_a_vfio_config_on_a_mig_offer_is_refused(node):
    claim = allocate_vfio(node.world.api, "vm", "gpu-0000-3b-00-0-mig-1g-5gb-0")
    error = refused(node, claim)
    assert error.startswith(
        "device gpu-0000-3b-00-0-mig-1g-5gb-0: VfioDeviceConfig (VFIOConfig) asks for a whole card"
    )


def test_the_annotation_with_a_sharing_config_is_refused(node):
    mps = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
    claim = allocate_share(node.world.api, "vm", WHOLE_A30, "100", mps)
    claim["status"]["allocation"]["devices"]["results"][0].pop("shareID")  # a card of its own
    node.world.api.patch(
        RESOURCE_CLAIMS, "vm", {"status": claim["status"]}, subresource="status", namespace="ns"
    )
    claim = reserve_for_pod(node.world, claim, "virt-launcher-vm", VM_ANNOTATION)
    assert "is asked for VFIO and for MPS sharing at once" in refused(node, claim)


def test_pods_that_cannot_be_read_fail_the_claim_with_the_rbac_it_needs(node):
    claim = reserve_for_pod(node.world, allocate(node.world.api, "vm", WHOLE_A30), "vm-pod", VM_ANNOTATION)
    real_get = node.world.api.get

    def forbidden(resource, name, namespace=None):
        if resource.plural == "pods":
            raise KubeError("403 Forbidden")
        return real_get(resource, name, namespace=namespace)

    node.world.api.get = forbidden
    error = refused(node, claim)
    assert error.startswith(
        "cannot read Pod ns/vm-pod, which the claim is reserved for, to see whether it asks"
    )
    assert error.endswith("gpu-handler needs get on pods")


def test_unwritable_driver_files_fail_with_every_function_back(node):
    claim = allocate_vfio(node.world.api, "vm", WHOLE_A100)
    service = node.service()
    service.vfio.host.read_only.add(node.audio(A100))  # /sys read-only there
    error = prepare(service, claim).error
    assert error.startswith(f"cannot pass card {A100} through: cannot write 'vfio-pci' to ")
    assert "Read-only file system; /sys is mounted read-only in gpu-handler's container" in error
    assert untouched(node)  # the card itself had moved already: it went back


def test_a_group_that_changes_between_check_and_bind_fails_with_nothing_bound(node):
    claim = allocate_vfio(node.world.api, "vm", WHOLE_A100)

    def hot_plug(step: str) -> None:
        if step == "check-vfio":  # a function appears in the group after it was checked
            node.host.add_function("0000:3b:00.2", NIC, None, node.groups[A100])

    error = prepare(node.service(after_step=hot_plug), claim).error
    assert error.startswith(
        f"IOMMU group {node.groups[A100]} of card {A100} changed between the check and the bind"
    )
    assert drivers(node, A100) == ("nvidia", "snd_hda_intel")
    assert entries(node) == {}
    assert node.events == []


def test_a_process_that_starts_between_check_and_bind_fails_with_nothing_bound(node):
    claim = allocate_vfio(node.world.api, "vm", WHOLE_A100)

    def start_a_process(step: str) -> None:
        if step == "check-vfio":
            node.world.nvml.set_busy(A100, True, (999,))

    error = prepare(node.service(after_step=start_a_process), claim).error
    assert error == f"processes run on card {A100} (PIDs 999): stop them; the kubelet retries the prepare"
    node.world.nvml.set_busy(A100, False)
    assert untouched(node)


def test_a_handler_without_passthrough_refuses_a_vfio_config(node):
    error = refused(node, allocate_vfio(node.world.api, "vm", WHOLE_A100), vfio=None)
    assert error == "the claim asks for VFIO, but this gpu-handler runs without VFIO support"
