# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the components write at run time (not rendered by Helm) is accepted by a real
kube-apiserver of each version: the Events every component records, ResourceClaim.status.devices
after prepare, and the MPS daemon Pods gpu-handler creates (a whole card's and a MIG instance's).
The components build these objects against an in-memory API; here the real server judges them
(dry run where nothing needs storing; a claim is stored in a namespace of the test's own, deleted
at the end)."""

from __future__ import annotations

import copy
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.mps import daemon_for
from deckhouse_gpu.domain.prepare.mps_pod import daemon_pod
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, RESOURCE_CLAIMS
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.prepare_world import allocate, build_world
from testkit.real_cluster import ApiError, RealCluster, object_path
from tests.module.helm_render_sets import RENDERED
from tests.real.installed_module import NAMESPACE, create_strict, install_module

A30 = "0000:17:00.0"
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
IMAGE = "registry.example.com/gpu@sha256:" + "a" * 64
LONGEST_CARD = ("w" * 240) + "-0000-17-00-0"  # a PhysicalGPU name at the 253-character limit


class Clock:
    def now(self) -> datetime:
        return datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return 0.0


def scratch_namespace(cluster: RealCluster) -> str:
    name = f"written-{secrets.token_hex(3)}"
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.mark.parametrize("which", ["cluster-scoped", "namespaced"])
def test_events_are_accepted(real_cluster: RealCluster, which: str) -> None:
    namespace = scratch_namespace(real_cluster) if which == "namespaced" else None
    try:
        regarding: dict[str, Any] = (
            {
                "apiVersion": "gpu.deckhouse.io/v1alpha1",
                "kind": "PhysicalGPU",
                "metadata": {"name": LONGEST_CARD, "uid": "u1"},
            }
            if namespace is None
            else {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c1", "namespace": namespace, "uid": "u2"},
            }
        )
        api = MemoryKube()
        EventRecorder(api, "gpu-handler", "worker-1", Clock()).record(
            regarding, "Warning", "PrepareFailed", "x" * 5000
        )
        (event,) = api.list(EVENTS).items
        assert len(event["message"]) == 1024  # our truncation, the server's limit
        sent = {key: value for key, value in event.items() if key not in ("metadata",)}
        sent["metadata"] = {k: event["metadata"][k] for k in ("name", "namespace") if k in event["metadata"]}
        create_strict(real_cluster, {"apiVersion": "v1", "kind": "Event", **sent})
    finally:
        if namespace is not None:
            real_cluster.delete("v1", "Namespace", namespace)


def test_claim_device_status_after_prepare_is_accepted(real_cluster: RealCluster, tmp_path: Path) -> None:
    world = build_world(tmp_path, {A30: "a30", "0000:31:00.0": "a30"})
    whole = allocate(world.api, "whole", "gpu-0000-31-00-0")
    mig = allocate(world.api, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-17-00-0-mig-2g-12gb-2")
    refs = [ClaimRef("ns", c["metadata"]["uid"], c["metadata"]["name"]) for c in (whole, mig)]
    results = world.service().prepare(refs)
    assert all(result.error == "" for result in results.values()), results
    namespace = scratch_namespace(real_cluster)
    try:
        for name in ("whole", "mig"):
            prepared = world.api.get(RESOURCE_CLAIMS, name, namespace="ns")
            assert len(prepared["status"]["devices"]) == len(
                prepared["status"]["allocation"]["devices"]["results"]
            )
            # The claim as the scheduler saw it (one request "gpu", as many devices as allocated);
            # the status is what the allocation and our prepare wrote.
            count = len(prepared["status"]["allocation"]["devices"]["results"])
            stored = real_cluster.create(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {
                                        "deviceClassName": "gpu",
                                        "allocationMode": "ExactCount",
                                        "count": count,
                                    },
                                }
                            ]
                        }
                    },
                }
            )
            stored["status"] = copy.deepcopy(prepared["status"])
            path = object_path(stored) + "/status?dryRun=All&fieldValidation=Strict"
            real_cluster.request("PUT", path, stored)
            # The check bites: status for a device the claim was not allocated is refused.
            stored["status"]["devices"][0]["device"] = "gpu-not-allocated"
            with pytest.raises(ApiError) as refused:
                real_cluster.request("PUT", path, stored)
            assert refused.value.status == 422
    finally:
        real_cluster.delete("v1", "Namespace", namespace)


@pytest.mark.parametrize("kind", ["whole", "mig"])
def test_mps_daemon_pods_are_accepted(real_cluster: RealCluster, kind: str) -> None:
    install_module(real_cluster, RENDERED["defaults"].get("Namespace", NAMESPACE))
    # Pods take the namespace's default service account; no controller-manager creates it here.
    real_cluster.ensure(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": NAMESPACE},
        }
    )
    plan = (
        DevicePlan("gpu", "w1", "gpu-0000-17-00-0", A30, "Physical", share_id="s1", uuid="GPU-1")
        if kind == "whole"
        else DevicePlan("gpu", "w1", "gpu-0000-17-00-0-mig-1g-6gb-2", A30, "MIG", None, 14, 2, 1)
    )
    uuid = "GPU-1" if kind == "whole" else "MIG-5"
    for root, pull in (("/", None), ("/run/nvidia/driver", "gpu-module-registry")):
        pod = daemon_pod(daemon_for(plan, "w1", PLUGIN, uuid), NAMESPACE, IMAGE, root, pull)
        create_strict(real_cluster, pod)
