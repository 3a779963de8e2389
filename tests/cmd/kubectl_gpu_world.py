# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The cluster the kubectl gpu command tests read through the real client: a fake API server in
front of realistic objects (published slices, claims the allocator placed), and a kubeconfig."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deckhouse_gpu.cmd.kubectl_gpu.main import main
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_cluster import RESOURCES, GpuCluster


@dataclass
class World:
    cluster: GpuCluster
    server: FakeApiServer
    kubeconfig: str

    def run(self, *argv: str, out: io.StringIO | None = None) -> tuple[int, str]:
        out = out or io.StringIO()
        code = main(["--kubeconfig", self.kubeconfig, *argv], out=out)
        return code, out.getvalue()

    def reads(self) -> Counter[str]:
        """Requests per path; the test fails at once if any was not a GET."""
        methods = {r.method for r in self.server.requests}
        assert methods <= {"GET"}, methods
        return Counter(r.path for r in self.server.requests)


def kubeconfig(directory: Path, url: str, namespace: str | None = None) -> str:
    context = {"cluster": "fake", "user": "me", **({"namespace": namespace} if namespace else {})}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": context}],
        "current-context": "fake",
    }
    path = directory / "kubeconfig"
    path.write_text(json.dumps(config))
    return str(path)


def build() -> GpuCluster:
    """An H100 node with a prepared MIG claim and a whole card taken, an A30 node, a shared A100, a
    T4; Pods waiting for two whole H100s, for a T4 and for an A30 (both from templates)."""
    cluster = GpuCluster()
    cluster.node("h100", "h100-80gb", 3)
    cluster.node("a30", "a30", 1)
    cluster.node("a100", "a100-40gb", 1, {"gpu.deckhouse.io/sharing": "true"})
    cluster.node("t4", "t4", 1)
    cluster.publish()
    cluster.classes()
    cluster.claim("ml", "small", "gpu-h100-80gb-mig-1g.10gb", 2, node="h100", pod="train", prepared=True)
    cluster.claim("ml", "big", "gpu-h100-80gb", 1, node="h100", pod="big", prepared=True)
    cluster.claim("ml", "notebook", "gpu-a100-40gb-shared", 1, node="a100", pod="notebook", share="25")
    cluster.claim("ml", "t4", "gpu-t4", 1, node="t4", pod="infer", prepared=True)
    cluster.claim("ml", "two", "gpu-h100-80gb", 2)
    cluster.pod("ml", "wants-two", [("gpu", "two", None)])
    cluster.template("ml", "one-t4", "gpu-t4")
    cluster.pod("ml", "wants-t4", [("gpu", None, "one-t4")])
    cluster.template("ml", "one-a30", "gpu-a30")
    cluster.pod("ml", "wants-a30", [("gpu", None, "one-a30")])
    return cluster


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    cluster = build()
    with FakeApiServer(cluster.kube, RESOURCES) as server:
        yield World(cluster, server, kubeconfig(tmp_path, server.url, namespace="ml"))


def extended_pod(
    cluster: GpuCluster, namespace: str, name: str, resources: dict[str, str], made: str | None = None
) -> None:
    """A Pending Pod whose container asks for extended resources (KEP-5004) and names no claim;
    ``made``: the claim the scheduler already made for them (status.extendedResourceClaimStatus)."""
    container = {"name": "app", "image": "cuda", "resources": {"limits": dict(resources)}}
    body = {"metadata": {"name": name, "namespace": namespace}, "spec": {"containers": [container]}}
    cluster.kube.create(PODS, body)
    status: dict[str, object] = {"phase": "Pending"}
    if made:
        status["extendedResourceClaimStatus"] = {"resourceClaimName": made, "requestMappings": []}
    cluster.kube.patch(PODS, name, {"status": status}, subresource="status", namespace=namespace)


def own_by_gpu_class(cluster: GpuCluster, device_class: str, gpu_class: str | None = None) -> None:
    """Makes the DeviceClass one a GPUClass generated: owned by it, as the GPUClass controller does."""
    owner = {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "GPUClass",
        "name": gpu_class or device_class,
        "uid": "0b9f0c7e-0000-4000-8000-000000000001",
        "controller": True,
    }
    cluster.kube.patch(DEVICE_CLASSES, device_class, {"metadata": {"ownerReferences": [owner]}})
