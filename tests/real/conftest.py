# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The real-cluster tier: every test here runs against real Kubernetes servers that the test run
starts itself (testkit/real_cluster.py), one cluster per version, shared by the whole run.

``real_cluster`` is parametrized over the versions of the shared binaries; ``kubelet_cluster``
over those that ship a kubelet. Where a version's binaries are absent the test skips with one
line saying where they were looked for, unless ``KUBE_ASSETS_REQUIRED`` is set (``.ci/run``
sets it): then the absence fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.real_cluster import (
    KUBELET_VERSIONS,
    VERSIONS,
    AssetsMissing,
    Clusters,
    RealCluster,
    assets_required,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/real/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.real_cluster)


@pytest.fixture(scope="session")
def clusters() -> Iterator[Clusters]:
    shared = Clusters()
    yield shared
    shared.stop()


def cluster_of(clusters: Clusters, version: str) -> RealCluster:
    try:
        return clusters.get(version)
    except AssetsMissing as missing:
        if assets_required():
            pytest.fail(str(missing))
        pytest.skip(str(missing))


@pytest.fixture(params=VERSIONS, ids=[f"k8s-{v}" for v in VERSIONS])
def real_cluster(request: pytest.FixtureRequest, clusters: Clusters) -> RealCluster:
    return cluster_of(clusters, str(request.param))


@pytest.fixture(params=KUBELET_VERSIONS, ids=[f"k8s-{v}" for v in KUBELET_VERSIONS])
def kubelet_cluster(request: pytest.FixtureRequest, clusters: Clusters) -> RealCluster:
    return cluster_of(clusters, str(request.param))
