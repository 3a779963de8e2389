# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""GPUClass on a real kube-apiserver: the server itself enforces the CRD's CEL rules the
controller checks again (domain/gpuclass/spec.py), and gpu-dra-controller's GPUClass loop, run
against it, makes a DeviceClass the server accepts (its generated CEL selector compiled by the
server), reports Ready, and deletes the DeviceClass with its class."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import yaml

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.cmd.gpu_dra_controller.run import start_dra_controller
from deckhouse_gpu.domain.gpuclass.spec import InvalidSpec, parse_spec
from deckhouse_gpu.services.allocation.gpuclass_controller import GpuClassSettings
from testkit.real_cluster import ApiError, RealCluster
from tests.real.installed_module import ROOT, apply_strict

CRD = yaml.safe_load((ROOT / "crds" / "gpuclass.yaml").read_text())
NAME = CRD["metadata"]["name"]
GROUP_VERSION = "gpu.deckhouse.io/v1alpha1"


def installed(cluster: RealCluster) -> None:
    apply_strict(cluster, CRD)

    def established() -> bool:
        found = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", NAME)
        conditions = {c["type"]: c["status"] for c in (found.get("status") or {}).get("conditions") or []}
        return conditions.get("Established") == "True"

    cluster.wait_for(established, 60, f"CRD {NAME} Established")


def gpu_class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "GPUClass", "metadata": {"name": name}, "spec": spec}


SPECS: list[dict[str, Any]] = [
    {"deviceKind": "Whole", "vfio": True, "cards": {"models": ["a30-pcie"]}},
    {"deviceKind": "MIG", "migProfile": "1g.10gb", "extendedResourceName": "gpu.deckhouse.io/mig-1g"},
    {"deviceKind": "Share", "sharing": {"strategy": "MPS", "sharePercent": 25}},
    {"deviceKind": "Whole", "cards": {"minMemory": "40Gi", "minComputeCapability": "8.0"}},
    {
        "deviceKind": "Whole",
        "cards": {"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
    },
    {"deviceKind": "MIG"},
    {"deviceKind": "Whole", "migProfile": "1g.10gb"},
    {"deviceKind": "Share"},
    {"deviceKind": "MIG", "migProfile": "1g.10gb", "vfio": True},
    {"deviceKind": "Share", "sharing": {"strategy": "TimeSlicing", "sharePercent": 50}},
    {"deviceKind": "Share", "sharing": {"strategy": "MPS", "interval": "Short"}},
    {"deviceKind": "Share", "sharing": {"strategy": "MPS"}, "extendedResourceName": "gpu.deckhouse.io/s"},
    {"deviceKind": "Whole", "extendedResourceName": "kubernetes.io/a30"},
    {"deviceKind": "Whole", "cards": {"minMemory": "lots"}},
    {"deviceKind": "Whole", "cards": {"minMemory": "0"}},
    # The NVIDIA device plugin's names (docs/MIGRATION.md): nvidia.com/gpu, the mixed MIG strategy's.
    {"deviceKind": "Whole", "extendedResourceName": "nvidia.com/gpu"},
    {"deviceKind": "MIG", "migProfile": "1g.10gb", "extendedResourceName": "nvidia.com/mig-1g.10gb"},
    {"deviceKind": "MIG", "migProfile": "1g.10gb+me", "extendedResourceName": "nvidia.com/mig-1g.10gb.me"},
    {"deviceKind": "MIG", "migProfile": "2g.20gb", "extendedResourceName": "nvidia.com/mig-1g.10gb"},
    {"deviceKind": "Whole", "extendedResourceName": "nvidia.com/mig-1g.10gb"},
]


def server_verdict(cluster: RealCluster, obj: dict[str, Any]) -> str:
    try:
        cluster.create(obj, dry_run=True)
    except ApiError as error:
        return "refused" if error.status == 422 else f"failed: {error}"
    return "accepted"


def test_the_server_and_the_controller_agree_on_every_rule(real_cluster: RealCluster) -> None:
    installed(real_cluster)
    disagreements = []
    for index, spec in enumerate(SPECS):
        server = server_verdict(real_cluster, gpu_class(f"rule-{index}", spec))
        try:
            parse_spec(spec)
            controller = "accepted"
        except InvalidSpec:
            controller = "refused"
        if server != controller:
            disagreements.append(f"{spec}: the server {server}, the controller {controller}")
    assert not disagreements, disagreements


def test_a_gpu_class_gets_its_device_class_from_the_controller(real_cluster: RealCluster) -> None:
    installed(real_cluster)
    name = f"vm-{real_cluster.version.replace('.', '-')}"
    created = real_cluster.create(gpu_class(name, SPECS[0]))
    stop = threading.Event()
    settings = GpuClassSettings(
        debounce_seconds=0.01, inventory_debounce_seconds=0.1, watch_timeout_seconds=5
    )
    api = load_kube(str(real_cluster.admin_kubeconfig))
    running = start_dra_controller(
        api, stop, leader_elect=False, pinned_version=real_cluster.version, class_settings=settings
    )
    try:

        def ready() -> dict[str, Any] | None:
            found = real_cluster.get(GROUP_VERSION, "GPUClass", name)
            for condition in (found.get("status") or {}).get("conditions") or []:
                if condition["type"] == "Ready":
                    return dict(condition)
            return None

        real_cluster.wait_for(lambda: ready() is not None, 60, "the GPUClass's Ready condition")
        condition = ready()
        assert condition is not None
        # No cards in this cluster: ready, and saying so.
        assert (condition["status"], condition["reason"]) == ("True", "NoMatchingDevices"), condition
        device_class = real_cluster.get("resource.k8s.io/v1", "DeviceClass", name)
        assert device_class["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert device_class["spec"]["config"][0]["opaque"]["parameters"]["kind"] == "VfioDeviceConfig"
        # No garbage collector runs here: the controller deletes the DeviceClass itself.
        real_cluster.delete(GROUP_VERSION, "GPUClass", name)

        def gone() -> bool:
            try:
                real_cluster.get("resource.k8s.io/v1", "DeviceClass", name)
            except ApiError as error:
                return error.status == 404
            return False

        real_cluster.wait_for(gone, 60, "the DeviceClass deleted with its GPUClass")
    finally:
        stop.set()
        running.shutdown()


pytestmark = pytest.mark.real_cluster
