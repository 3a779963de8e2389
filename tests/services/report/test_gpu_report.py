# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubectl gpu reports over the KubeAPI port: what they read, filters, and every failure as one
line of the right kind (ClusterError: cannot read the cluster; InputError: wrong question)."""

from __future__ import annotations

import pytest

from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import Forbidden, NotFound, Unavailable
from deckhouse_gpu.services.report import gpu_report
from deckhouse_gpu.services.report.cluster_reads import ClusterError, InputError
from testkit.gpu_cluster import GpuCluster


@pytest.fixture
def cluster() -> GpuCluster:
    cluster = GpuCluster()
    cluster.node("a30", "a30", 2)
    cluster.node("t4", "t4", 1)
    cluster.node("cpu")
    cluster.publish()
    cluster.classes(["gpu-a30", "gpu-a30-mig-1g.6gb", "gpu-t4"])
    cluster.claim("ml", "one", "gpu-t4", node="t4", pod="infer", prepared=True)
    return cluster


def test_reports_read_and_never_write(cluster: GpuCluster) -> None:
    cluster.pod("ml", "waiting", [("gpu", None, "missing-template")])
    writes = cluster.kube.writes
    status = gpu_report.status(cluster.kube)
    assert [(r.node, r.mode) for r in status.cards] == [("a30", "idle"), ("a30", "idle"), ("t4", "whole")]
    assert [r.node for r in gpu_report.status(cluster.kube, ["t4"]).cards] == ["t4"]
    capacity = gpu_report.capacity(cluster.kube)
    assert (capacity.kubernetes, capacity.nodes) == ("1.35", ["a30", "cpu", "t4"])
    assert {c.device_class: c.total for c in capacity.classes} == {
        "gpu-a30": 2,
        "gpu-a30-mig-1g.6gb": 8,
        "gpu-t4": 0,
    }
    only = gpu_report.capacity(cluster.kube, "gpu-a30", "a30")
    assert [(c.device_class, c.nodes) for c in only.classes] == [("gpu-a30", {"a30": 2})]
    assert not gpu_report.explain(cluster.kube, "ml", "waiting").placeable
    assert cluster.kube.writes == writes


def test_a_class_that_cannot_be_used_is_named_and_left_out(cluster: GpuCluster) -> None:
    cluster.kube.create(
        DEVICE_CLASSES, {"metadata": {"name": "empty"}, "spec": {"selectors": [{"cel": {"expression": " "}}]}}
    )
    capacity = gpu_report.capacity(cluster.kube)
    assert "empty" not in [c.device_class for c in capacity.classes]
    assert capacity.problems == ["DeviceClass empty: empty CEL selector"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda kube: gpu_report.explain(kube, "ml", "nope"), 'pod "nope" not found in namespace "ml"'),
        (
            lambda kube: gpu_report.explain(kube, "ml", "infer"),
            "pod ml/infer is Running, not Pending: nothing to explain",
        ),
        (
            lambda kube: gpu_report.explain(kube, "ml", "plain"),
            "pod ml/plain has no resource claims and asks for no extended resource of a DeviceClass: "
            "nothing to explain",
        ),
        (lambda kube: gpu_report.capacity(kube, "gpu-h100"), 'DeviceClass "gpu-h100" not found'),
        (lambda kube: gpu_report.capacity(kube, None, "w9"), 'node "w9" not found'),
        (lambda kube: gpu_report.status(kube, ["cpu", "t4"]), "no PhysicalGPU on node cpu"),
    ],
)
def test_wrong_questions_are_input_errors(cluster: GpuCluster, call, message: str) -> None:
    cluster.pod("ml", "plain", [])
    with pytest.raises(InputError) as caught:
        call(cluster.kube)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (
            NotFound("the server could not find the requested resource"),
            "the gpu module is not installed in this cluster: "
            "the API server serves no physicalgpus.gpu.deckhouse.io",
        ),
        (
            Forbidden("GET /apis/gpu.deckhouse.io/v1alpha1/physicalgpus: 403 Forbidden: no"),
            "not allowed to list physicalgpus.gpu.deckhouse.io (GET",
        ),
        (Unavailable("connection refused"), "the API server cannot be reached: connection refused"),
    ],
)
def test_a_cluster_that_cannot_be_read(cluster: GpuCluster, failure: Exception, message: str) -> None:
    cluster.kube.fail_next("list", failure)  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match="^" + message.replace("(", r"\(")):
        gpu_report.status(cluster.kube)


def test_no_permission_names_the_resource_and_the_rbac(cluster: GpuCluster) -> None:
    cluster.kube.fail_next("list", Forbidden("403 Forbidden: deviceclasses is forbidden"), times=1)
    with pytest.raises(ClusterError) as caught:
        gpu_report.capacity(cluster.kube)  # lists DeviceClasses first
    assert str(caught.value).startswith("not allowed to list deviceclasses.resource.k8s.io (")
    assert "docs/KUBECTL.md" in str(caught.value)
    cluster.kube.fail_next("list", NotFound("404"), times=1)
    with pytest.raises(ClusterError, match=r"Dynamic Resource Allocation needs Kubernetes 1\.34"):
        gpu_report.capacity(cluster.kube)


@pytest.mark.parametrize(("server", "semantics"), [(34, "1.34"), (35, "1.35"), (37, "1.37"), (38, "1.37")])
def test_the_allocator_follows_the_api_servers_version(server: int, semantics: str) -> None:
    cluster = GpuCluster(minor=server)  # slices laid out for that server; 1.38 is allocated as 1.37
    cluster.node("a30", "a30", 2)
    cluster.publish()
    cluster.classes(["gpu-a30", "gpu-a30-mig-1g.6gb"])
    capacity = gpu_report.capacity(cluster.kube)
    assert capacity.kubernetes == semantics
    assert {c.device_class: c.total for c in capacity.classes} == {"gpu-a30": 2, "gpu-a30-mig-1g.6gb": 8}
