# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Extended resources mapped to DeviceClasses (KEP-5004) and the GPUClass owning a DeviceClass."""

from __future__ import annotations

from deckhouse_gpu.domain.report.extended import (
    class_label,
    extended_claim,
    extended_requests,
    gpu_class_of,
    resource_classes,
)

A30 = {"metadata": {"name": "a30"}, "spec": {"extendedResourceName": "gpu.deckhouse.io/a30"}}


def owned(kind: str, api_version: str) -> dict[str, object]:
    ref = {"apiVersion": api_version, "kind": kind, "name": "vm-a30"}
    return {"metadata": {"name": "vm-a30", "ownerReferences": [ref]}}


def test_only_a_gpu_class_of_our_group_is_an_owner() -> None:
    assert gpu_class_of(owned("GPUClass", "gpu.deckhouse.io/v1alpha1")) == "vm-a30"
    assert gpu_class_of(owned("GPUClass", "example.com/v1")) is None
    assert gpu_class_of(owned("Deployment", "apps/v1")) is None
    assert gpu_class_of({"metadata": {}}) is None
    assert class_label("vm-a30", {"vm-a30": "vm-a30"}) == "vm-a30 (GPUClass)"
    assert class_label("x", {"x": "y"}) == "x (GPUClass y)"


def test_resource_names_map_to_classes_explicitly_and_implicitly() -> None:
    found = resource_classes([A30, {"metadata": {"name": "t4"}, "spec": {}}])
    assert found == {
        "gpu.deckhouse.io/a30": "a30",
        "deviceclass.resource.kubernetes.io/a30": "a30",
        "deviceclass.resource.kubernetes.io/t4": "t4",
    }


def test_requests_per_container_and_the_claim_the_scheduler_would_make() -> None:
    pod = {
        "metadata": {"namespace": "ml", "name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"limits": {"gpu.deckhouse.io/a30": "2", "cpu": "1"}}},
                {"name": "b", "resources": {"requests": {"gpu.deckhouse.io/a30": 1, "nvidia.com/gpu": 1}}},
            ]
        },
    }
    requests = extended_requests(pod, resource_classes([A30]))
    assert [(r.container, r.resource, r.count, r.device_class, r.request) for r in requests] == [
        ("a", "gpu.deckhouse.io/a30", 2, "a30", "container-0-request-0"),
        ("b", "gpu.deckhouse.io/a30", 1, "a30", "container-1-request-0"),
    ]
    claim = extended_claim(pod, requests, {})
    assert claim is not None
    assert (claim.claim, claim.state) == ("ml/p-extended-resources", "not created")
    assert claim.obj is not None
    assert [r["exactly"]["count"] for r in claim.obj["spec"]["devices"]["requests"]] == [2, 1]
