# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The informers of gpu-dra-controller keep only what allocation reads of Pods and Nodes."""

from __future__ import annotations

from deckhouse_gpu.services.allocation.cache_views import node_labels_view, pod_claims_view


def test_a_pod_keeps_its_claims_node_and_phase_only() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ml",
            "uid": "u",
            "resourceVersion": "7",
            "annotations": {"a": "b"},
        },
        "spec": {"nodeName": "w1", "resourceClaims": [{"name": "gpu"}], "containers": [{"name": "c"}]},
        "status": {"phase": "Pending", "resourceClaimStatuses": [], "conditions": [{"type": "Ready"}]},
    }
    assert pod_claims_view(pod) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "uid": "u", "resourceVersion": "7"},
        "spec": {"nodeName": "w1", "resourceClaims": [{"name": "gpu"}]},
        "status": {"phase": "Pending", "resourceClaimStatuses": []},
    }


def test_a_node_keeps_its_name_labels_and_version() -> None:
    node = {"metadata": {"name": "w1", "labels": {"a": "b"}, "resourceVersion": "3", "uid": "x"}, "spec": {}}
    assert node_labels_view(node) == {
        "metadata": {"name": "w1", "labels": {"a": "b"}, "resourceVersion": "3"}
    }
    assert node_labels_view({}) == {"metadata": {}}


def test_a_node_keeps_the_extended_resources_device_plugins_serve() -> None:
    node = {
        "metadata": {"name": "w1"},
        "status": {"allocatable": {"cpu": "8", "memory": "1Gi", "nvidia.com/gpu": "2"}, "capacity": {}},
    }
    assert node_labels_view(node) == {
        "metadata": {"name": "w1"},
        "status": {"allocatable": {"nvidia.com/gpu": "2"}},
    }
