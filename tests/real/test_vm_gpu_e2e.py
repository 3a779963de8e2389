# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A Deckhouse VM gets a GPU from this module end to end (issue 31, item 4), on real Kubernetes.

The world is tests/real/handler_world.py's: a real kubelet (Kubernetes' fake container runtime)
and a real ``gpu-handler run`` on a simulated bare-metal host with two A30s, the real scheduler
and controller-manager (its resourceclaim controller makes the claims of templates). Beside them
gpu-dra-controller runs in this process against the same server, so GPUClasses become
DeviceClasses as in a cluster.

The VM half does what deckhouse/virtualization's controller and KubeVirt do: a GPUClass for VMs
(``deviceKind: Whole``, ``vfio: true``) becomes Ready with its DeviceClass; the VM module's own
ResourceClaimTemplate (request ``gpu-0``, ``deviceClassName`` = the GPUClass, ExactCount 1 and the
``VfioDeviceConfig`` opaque config), which our webhook's validation accepts, and a virt-launcher-like
Pod using it are allocated by the scheduler and prepared by gpu-handler for the kubelet. The fake
runtime applies no CDI edits, so what the container would get is read where gpu-handler writes it
on the simulated host: the CDI spec (``/dev/vfio/*``, the metadata bind mount) and the KEP-5304
metadata file with ``resource.kubernetes.io/pciBusID``. Deleting the Pod unprepares the claim and
binds the card back to nvidia.

The other half: a GPUClass of whole cards used through its extended resource by an ordinary Pod,
a MIG GPUClass and a shared (MPS) GPUClass, each allocated and prepared under the same kubelet.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.cmd.gpu_dra_controller.run import start_dra_controller
from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.sharing import ComputeMode
from deckhouse_gpu.services.allocation.config_admission import review
from deckhouse_gpu.services.allocation.gpuclass_controller import GpuClassSettings
from testkit.real_cluster import KUBELET_VERSIONS, Clusters
from tests.real.conftest import cluster_of
from tests.real.handler_world import (
    CARD_A,
    CARD_B,
    DRIVER,
    IMAGE,
    RESOURCE,
    WHOLE_A,
    WHOLE_B,
    HandlerNode,
    handler_node,
)
from tests.real.sharing_checks import assert_mps_client, assert_unshared_on_the_host
from tests.real.test_gpuclass_real import GROUP_VERSION, gpu_class, installed

VM_CLASS = "e2e-a30-vm"
WHOLE_CLASS, WHOLE_RESOURCE = "e2e-a30", "gpu.deckhouse.io/e2e-a30"
MIG_CLASS, MPS_CLASS = "e2e-a30-mig-1g", "e2e-a30-mps"
CLASSES: dict[str, dict[str, Any]] = {
    VM_CLASS: {"deviceKind": "Whole", "vfio": True, "cards": {"models": ["a30-pcie"]}},
    WHOLE_CLASS: {"deviceKind": "Whole", "cards": {"models": ["a30-pcie"]},
                  "extendedResourceName": WHOLE_RESOURCE},
    MIG_CLASS: {"deviceKind": "MIG", "migProfile": "1g.6gb", "cards": {"models": ["a30-pcie"]}},
    MPS_CLASS: {"deviceKind": "Share", "cards": {"models": ["a30-pcie"]},
                "sharing": {"strategy": "MPS", "sharePercent": 50}},
}  # fmt: skip
GROUPS = {CARD_A: 40, CARD_B: 41}  # the simulated host's IOMMU groups (handler_world.build_host)
# What deckhouse/virtualization names things (kvbuilder): the Pod's claim and the request are
# "gpu-<index>", the template "<vm>-<index>-<8 characters of a hash of the VM's name>".
VM, REQUEST = "vm-1", "gpu-0"
TEMPLATE = f"{VM}-0-5f1c9a2e"
LAUNCHER = f"virt-launcher-{VM}-x7k2p"
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"


def vm_claim_template(namespace: str, gpu_class_name: str) -> dict[str, Any]:
    """The ResourceClaimTemplate exactly as the VM module builds it for the VM's first GPU."""
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE, "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": REQUEST,
                            "exactly": {
                                "deviceClassName": gpu_class_name,
                                "allocationMode": "ExactCount",
                                "count": 1,
                            },
                        }
                    ],
                    "config": [
                        {
                            "requests": [REQUEST],
                            "opaque": {
                                "driver": DRIVER,
                                "parameters": {
                                    "apiVersion": "resource.gpu.deckhouse.io/v1alpha1",
                                    "kind": "VfioDeviceConfig",
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


def virt_launcher(node: HandlerNode) -> dict[str, Any]:
    """KubeVirt's launcher Pod of the VM, reduced to what DRA reads: the template's claim under
    the VM module's pod-local name, used by the compute container."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": LAUNCHER, "namespace": node.namespace,
                     "labels": {"kubevirt.io": "virt-launcher"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.node},
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1,
            "resourceClaims": [{"name": REQUEST, "resourceClaimTemplateName": TEMPLATE}],
            "containers": [{"name": "compute", "image": IMAGE, "resources": {"claims": [{"name": REQUEST}]}}],
        },
    }  # fmt: skip


def ready_condition(node: HandlerNode, name: str, reason: str = "DeviceClassReady") -> dict[str, Any] | None:
    """The GPUClass's Ready condition once True (all the VM module looks at) with ``reason``."""
    found = node.cluster.get(GROUP_VERSION, "GPUClass", name)
    for condition in (found.get("status") or {}).get("conditions") or []:
        if (condition["type"], condition["status"], condition["reason"]) == ("Ready", "True", reason):
            return dict(condition)
    return None


def prepared(node: HandlerNode, uid: str) -> bool:
    return bool((node.checkpoint().get(uid) or {}).get("state") == "PrepareCompleted")


def metadata_documents(path: Path) -> list[dict[str, Any]]:
    """The file is a stream of DeviceMetadata objects, one per API version."""
    text, documents, decoder, at = path.read_text(), [], json.JSONDecoder(), 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        document, at = decoder.raw_decode(text, at)
        documents.append(document)
    return documents


@pytest.fixture(scope="module", params=KUBELET_VERSIONS, ids=[f"k8s-{v}" for v in KUBELET_VERSIONS])
def world(request: pytest.FixtureRequest, clusters: Clusters) -> Iterator[HandlerNode]:
    cluster = cluster_of(clusters, str(request.param))
    installed(cluster)
    with handler_node(cluster, f"vmgpu-{cluster.version.replace('.', '')}") as node:
        stop = threading.Event()
        settings = GpuClassSettings(
            debounce_seconds=0.01, inventory_debounce_seconds=0.2, watch_timeout_seconds=5
        )
        running = start_dra_controller(
            load_kube(str(cluster.admin_kubeconfig)),
            stop,
            leader_elect=False,
            pinned_version=cluster.version,
            class_settings=settings,
        )
        try:
            node.wait(lambda: node.registrations() >= 1, 90, "the kubelet registers gpu-handler")
            node.wait(lambda: {WHOLE_A, WHOLE_B} <= node.devices(), 60, "the node's ResourceSlices")
            for name, spec in CLASSES.items():
                cluster.apply(gpu_class(name, spec))
            yield node
        finally:
            for name in CLASSES:
                cluster.request("DELETE", f"/apis/{GROUP_VERSION}/gpuclasses/{name}")
            stop.set()
            running.shutdown()


def test_every_gpu_class_is_ready_with_its_device_class(world: HandlerNode) -> None:
    for name in CLASSES:
        # No node shares its cards yet: the MPS class is Ready and says that nothing matches.
        reason = "NoMatchingDevices" if name == MPS_CLASS else "DeviceClassReady"
        condition = world.wait(partial(ready_condition, world, name, reason), 60, f"GPUClass {name} {reason}")
        device_class = world.cluster.get(RESOURCE, "DeviceClass", name)
        owner = world.cluster.get(GROUP_VERSION, "GPUClass", name)["metadata"]["uid"]
        assert device_class["metadata"]["ownerReferences"][0]["uid"] == owner, condition
    vm = world.cluster.get(RESOURCE, "DeviceClass", VM_CLASS)["spec"]
    assert vm["config"][0]["opaque"]["parameters"]["kind"] == "VfioDeviceConfig"
    assert (
        world.cluster.get(RESOURCE, "DeviceClass", WHOLE_CLASS)["spec"]["extendedResourceName"]
        == WHOLE_RESOURCE
    )


def test_a_vm_gets_a_card_through_the_vm_modules_claim_template_and_gives_it_back(world: HandlerNode) -> None:
    node, cluster = world, world.cluster
    node.wait(
        lambda: ready_condition(node, VM_CLASS), 60, "the VM GPUClass Ready"
    )  # what the VM module waits for
    template = vm_claim_template(node.namespace, VM_CLASS)
    # Our webhook's validation, as the API server would call it for the template.
    admission = review(
        {
            "uid": "vm-1",
            "operation": "CREATE",
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaimTemplate"},
            "object": template,
        }
    )
    assert admission["allowed"] is True, admission
    assert "warnings" not in admission, admission
    cluster.create(template)
    cluster.create(virt_launcher(node))
    pod = node.wait_running(LAUNCHER, timeout=90)

    # The resourceclaim controller made the claim from the template; the scheduler allocated it.
    (status,) = pod["status"]["resourceClaimStatuses"]
    assert status["name"] == REQUEST
    claim = node.get_claim(status["resourceClaimName"])
    uid = claim["metadata"]["uid"]
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["request"] == REQUEST
    assert result["device"] in (WHOLE_A, WHOLE_B)
    card = CARD_A if result["device"] == WHOLE_A else CARD_B
    assert prepared(node, uid)
    assert node.driver_of(card) == "vfio-pci"
    # The audio function of its IOMMU group went with it.
    node.wait(lambda: node.driver_of(card[:-1] + "1") == "vfio-pci", 15, "the audio function on vfio-pci")

    # What the container gets: the CDI spec gpu-handler wrote on the host.
    spec = json.loads((node.host_root / "etc/cdi" / claim_spec_file(uid)).read_text())
    (device,) = spec["devices"]
    edits = device["containerEdits"]
    assert [n["path"] for n in edits["deviceNodes"]] == ["/dev/vfio/vfio", f"/dev/vfio/{GROUPS[card]}"]
    assert "containerEdits" not in spec  # nothing of the nvidia driver goes into a VM's launcher
    container_path = (
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/"
        f"{REQUEST}/{REQUEST}/{DRIVER}-metadata.json"
    )
    (mount,) = [m for m in edits.get("mounts") or [] if m["containerPath"] == container_path]
    # The mount's host path is the kubelet's plugin directory; the file is there (through the link).
    metadata_file = node.plugin_dir / "dra-device-metadata" / uid / REQUEST / "metadata.json"
    assert mount["hostPath"] == str(metadata_file)
    documents = metadata_documents(metadata_file)
    assert documents
    assert all(d["kind"] == "DeviceMetadata" for d in documents)
    for document in documents:
        assert document["podClaimName"] == REQUEST
        (entry,) = document["requests"]
        (found,) = entry["devices"]
        assert found["attributes"][PCI_BUS_ID] == {"string": card}, found

    # The VM stops: its launcher Pod goes, the card is unprepared and bound back to nvidia.
    node.delete_pod(LAUNCHER)
    node.wait(lambda: uid not in node.checkpoint(), 30, "the VM's claim unprepared")
    assert node.driver_of(card) == "nvidia"
    assert node.driver_of(card[:-1] + "1") == "snd_hda_intel"
    assert not (node.plugin_dir / "dra-device-metadata" / uid).exists()
    assert not (node.host_root / "etc/cdi" / claim_spec_file(uid)).exists()
    cluster.delete(RESOURCE, "ResourceClaimTemplate", TEMPLATE, node.namespace)


def test_an_ordinary_pod_gets_a_whole_card_through_the_classes_extended_resource(world: HandlerNode) -> None:
    node = world
    node.wait(lambda: ready_condition(node, WHOLE_CLASS), 60, "the whole-card GPUClass Ready")
    node.pod("cuda", limits={WHOLE_RESOURCE: "1"})
    pod = node.wait_running("cuda", timeout=90)
    claim = node.get_claim(pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"])
    uid = claim["metadata"]["uid"]
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["device"] in (WHOLE_A, WHOLE_B)
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == WHOLE_CLASS
    assert prepared(node, uid)
    node.delete_pod("cuda")
    node.wait(lambda: uid not in node.checkpoint(), 30, "the extended resource's claim unprepared")


def test_a_mig_gpu_class_gets_an_instance_made_at_prepare(world: HandlerNode) -> None:
    node = world
    node.wait(lambda: ready_condition(node, MIG_CLASS), 60, "the MIG GPUClass Ready")
    claim = node.claim("mig", MIG_CLASS)
    node.pod("mig", claim="mig")
    node.wait_running("mig", timeout=90)
    (device,) = node.allocated("mig")
    card = CARD_A if device.startswith(WHOLE_A) else CARD_B
    assert "mig-1g-6gb" in device
    assert prepared(node, claim["metadata"]["uid"])
    assert len(node.mig_instances(card)) == 1
    node.delete_pod("mig")
    node.wait(lambda: claim["metadata"]["uid"] not in node.checkpoint(), 30, "the MIG claim unprepared")
    assert node.mig_instances(card) == []
    node.delete_claim("mig")


def test_an_mps_gpu_class_shares_a_card_on_a_sharing_node(world: HandlerNode) -> None:
    node = world
    node.label("gpu.deckhouse.io/sharing", "true")
    try:
        node.wait(lambda: node.devices() == {WHOLE_A, WHOLE_B}, 60, "shared offers")
        node.wait(lambda: ready_condition(node, MPS_CLASS), 60, "the MPS GPUClass Ready, its cards found")
        # A DeviceClass cannot ask for capacity: each claim asks for the class's share itself.
        first = node.claim("mps-1", MPS_CLASS, share=50)
        second = node.claim("mps-2", MPS_CLASS, share=50)
        node.pod("mps-1", claim="mps-1")
        node.pod("mps-2", claim="mps-2")
        node.wait_running("mps-1", timeout=90)
        node.wait_running("mps-2", timeout=90)
        for claim in (first, second):
            assert prepared(node, claim["metadata"]["uid"])
        # Two halves: on one card, or one on each; either way each result is a share of a card.
        used = set()
        for claim in (first, second):
            (result,) = node.get_claim(claim["metadata"]["name"])["status"]["allocation"]["devices"][
                "results"
            ]
            assert result["consumedCapacity"]["sharePercent"] == "50", result
            used.add(result["device"])
            # On the host: the claim's container is a client of its card's daemon, with its limits.
            assert_mps_client(node, claim, result["device"], 50)
        cards = {WHOLE_A: CARD_A, WHOLE_B: CARD_B}
        settings = node.card_settings()
        for device, card in cards.items():
            expected = ComputeMode.EXCLUSIVE_PROCESS if device in used else ComputeMode.DEFAULT
            assert settings.compute_mode(card) == expected, (card, used)
        # One daemon per shared card, run on this node.
        node.wait(lambda: len(node.mps_daemons()) == len(used), 60, "one MPS daemon Pod per shared card")
        node.delete_pod("mps-1")
        node.delete_pod("mps-2")
        node.wait(lambda: node.checkpoint() == {}, 30, "both shares unprepared")
        assert_unshared_on_the_host(node, first, second)
        node.delete_claim("mps-1")
        node.delete_claim("mps-2")
    finally:
        node.label("gpu.deckhouse.io/sharing", None)


pytestmark = pytest.mark.real_cluster
