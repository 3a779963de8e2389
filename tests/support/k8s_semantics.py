# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Semantic rules of built-in Kubernetes types that the API server enforces and an OpenAPI schema
check does not see, for the kinds the module renders.

A ``matchFields`` term on ``metadata.name`` with two values is well-formed for the OpenAPI schema
and rejected by the API server (``ValidateNodeFieldSelectorRequirement``): that is how three
DaemonSets passed every test and failed on a cluster with two GPU nodes. The rules here follow
``pkg/apis/core/validation``, ``pkg/apis/apps/validation``, ``pkg/apis/policy/validation``,
``pkg/apis/admissionregistration/validation`` and ``apimachinery``'s name and label checks, for the
fields the module actually sets; messages name the field path as the server does.

The rules are split by what they check: names, labels and values in k8s_names.py, scheduling in
k8s_scheduling.py, volumes and containers in k8s_containers.py, workloads in k8s_workloads.py,
the other kinds in k8s_other_kinds.py; this module applies them to whole objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from tests.support.k8s_names import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    Obj,
    annotation_errors,
    label_errors,
    qualified_name_errors,
)
from tests.support.k8s_other_kinds import (
    pdb_errors,
    policy_errors,
    rbac_errors,
    service_errors,
    webhook_errors,
)
from tests.support.k8s_scheduling import node_field_requirement_errors
from tests.support.k8s_workloads import pod_errors, workload_errors

__all__ = [
    "DNS1123_SUBDOMAIN",
    "MAX_OBJECT_BYTES",
    "iter_errors",
    "node_field_requirement_errors",
    "object_errors",
    "qualified_name_errors",
]

# What etcd accepts in one request by default (--max-request-bytes 1.5 MiB); the API server refuses
# larger objects with "etcdserver: request is too large".
MAX_OBJECT_BYTES = 1536 * 1024


# RBAC objects take any path segment (ValidateRBACName): "d8:gpu:gpu-controller" is fine there.
PATH_SEGMENT = re.compile(r"^(?!\.\.?$)[^/%]+$")
NAME_RULES = {
    "Namespace": (DNS1123_LABEL, 63),
    "Service": (DNS1035_LABEL, 63),
    "Role": (PATH_SEGMENT, 253),
    "ClusterRole": (PATH_SEGMENT, 253),
    "RoleBinding": (PATH_SEGMENT, 253),
    "ClusterRoleBinding": (PATH_SEGMENT, 253),
}
CHECKS = {
    "DaemonSet": workload_errors,
    "Deployment": workload_errors,
    "Pod": pod_errors,
    "Service": service_errors,
    "PodDisruptionBudget": pdb_errors,
    "ValidatingWebhookConfiguration": webhook_errors,
    "MutatingWebhookConfiguration": webhook_errors,
    "ValidatingAdmissionPolicy": policy_errors,
    "ValidatingAdmissionPolicyBinding": policy_errors,
    "Role": rbac_errors,
    "ClusterRole": rbac_errors,
}


def object_errors(obj: Obj, size: int | None = None) -> list[str]:
    """Every rule that applies to ``obj``: metadata for all, the kind's own rules."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name", "")
    errors = []
    pattern, limit = NAME_RULES.get(obj["kind"], (DNS1123_SUBDOMAIN, 253))
    if not pattern.match(name) or len(name) > limit:
        errors.append(f"metadata.name: Invalid value: {name!r}")
    errors += label_errors(metadata.get("labels"), "metadata.labels")
    errors += annotation_errors(metadata.get("annotations"), "metadata.annotations")
    if size is not None and size > MAX_OBJECT_BYTES:
        errors.append(f"<object>: Too long: {size} bytes, etcd accepts at most {MAX_OBJECT_BYTES}")
    check = CHECKS.get(obj["kind"])
    if check is not None:
        errors += check(obj)
    return [f"{obj['kind']}/{name}: {error}" for error in errors]


def iter_errors(objects: Iterable[Obj]) -> Iterator[str]:
    """Every rule over every object, sized as the API server stores it (compact JSON)."""
    for obj in objects:
        yield from object_errors(obj, len(json.dumps(obj, separators=(",", ":")).encode()))
