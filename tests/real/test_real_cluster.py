# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The tier's own fixture: each version's API server serves the DRA API it is started for and
enforces RBAC, so the tests built on it judge what they claim to."""

from __future__ import annotations

import pytest

from testkit.real_cluster import ApiError, RealCluster, gates


def test_serves_resource_v1_and_the_versions_the_scheduler_needs(real_cluster: RealCluster) -> None:
    groups = real_cluster.request("GET", "/apis/resource.k8s.io")
    served = {version["version"] for version in groups["versions"]}
    assert {"v1", "v1beta1", "v1beta2"} <= served
    assert ("v1alpha3" in served) == (real_cluster.version in ("1.34", "1.35"))
    version = real_cluster.request("GET", "/version")
    assert f"{version['major']}.{version['minor']}".rstrip("+") == real_cluster.version


def test_feature_gates_follow_the_version(real_cluster: RealCluster) -> None:
    assert ("DRADeviceTaintRules" in gates(real_cluster.version)) == (real_cluster.version != "1.34")
    metrics = real_cluster.request("GET", "/metrics", raw=True)
    enabled = [
        line
        for line in metrics.splitlines()
        if line.startswith('kubernetes_feature_enabled{name="DRAPartitionableDevices"')
    ]
    assert enabled
    assert enabled[0].endswith(" 1")


def test_a_service_account_token_is_judged_by_rbac(real_cluster: RealCluster) -> None:
    token = real_cluster.service_account_token("gpu-tier-check", "nobody")
    kubeconfig = real_cluster.token_kubeconfig("nobody", token)
    assert kubeconfig.exists()
    review = real_cluster.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "system:serviceaccount:gpu-tier-check:nobody",
                "resourceAttributes": {
                    "group": "resource.k8s.io",
                    "resource": "resourceslices",
                    "verb": "create",
                },
            },
        },
    )
    assert review["status"]["allowed"] is False


def test_invalid_objects_are_refused_by_the_server(real_cluster: RealCluster) -> None:
    with pytest.raises(ApiError) as refused:
        real_cluster.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "Not_A_DNS_Name"},
                "spec": {},
            },
            dry_run=True,
        )
    assert refused.value.status == 422
