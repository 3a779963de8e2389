# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-dra-controller's informers keep of Pods and Nodes: only the fields allocation, events
and node selection read, because a cluster's Pods are many and big."""

from __future__ import annotations

from deckhouse_gpu.ports.kube import Object


def pod_claims_view(pod: Object) -> Object:
    """Pods are many and big; the cache keeps only what allocation and events need."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    kept = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: meta[k] for k in kept if k in meta},
        "spec": {k: spec[k] for k in ("nodeName", "resourceClaims") if k in spec},
        "status": {k: status[k] for k in ("phase", "resourceClaimStatuses") if k in status},
    }


def node_labels_view(node: Object) -> Object:
    """Labels, and the extended resources its kubelet's device plugins have allocatable: a GPUClass
    whose extended resource a plugin serves there says so (DESIGN.md D16)."""
    meta = node.get("metadata") or {}
    view: Object = {"metadata": {k: meta[k] for k in ("name", "labels", "resourceVersion") if k in meta}}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    extended = {name: value for name, value in allocatable.items() if "/" in name}
    if extended:
        view["status"] = {"allocatable": extended}
    return view
