# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DaemonSets and Deployments as the API server checks them (``pkg/apis/core/validation`` for the
pod template, ``pkg/apis/apps/validation`` for the rest), for the semantic rules of
tests/support/k8s_semantics.py: the pod spec, the selector against the template's labels, and the
rolling-update strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.support.k8s_containers import container_errors, volume_errors
from tests.support.k8s_names import (
    DNS1123_SUBDOMAIN,
    Obj,
    annotation_errors,
    int_or_percent_errors,
    label_errors,
)
from tests.support.k8s_scheduling import affinity_errors, toleration_errors


def pod_spec_errors(spec: Obj, path: str, *, workload: bool = True) -> list[str]:
    """``workload``: a template of a DaemonSet or Deployment, which must restart Always."""
    errors: list[str] = []
    volumes = spec.get("volumes") or []
    errors += volume_errors(volumes, f"{path}.volumes")
    names = {v.get("name") for v in volumes}
    seen: set[str] = set()
    for section in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(section) or []):
            at = f"{path}.{section}[{index}]"
            errors += container_errors(container, names, at)
            if container.get("name") in seen:
                errors.append(f"{at}.name: Duplicate value: {container.get('name')!r}")
            seen.add(container.get("name", ""))
    if not spec.get("containers"):
        errors.append(f"{path}.containers: Required value")
    errors += label_errors(spec.get("nodeSelector"), f"{path}.nodeSelector")
    errors += affinity_errors(spec.get("affinity"), f"{path}.affinity")
    errors += toleration_errors(spec.get("tolerations") or [], f"{path}.tolerations")
    account = spec.get("serviceAccountName", "")
    if account and not DNS1123_SUBDOMAIN.match(account):
        errors.append(f"{path}.serviceAccountName: Invalid value: {account!r}")
    policy = spec.get("restartPolicy", "Always")
    if workload and policy != "Always":
        errors.append(
            f"{path}.restartPolicy: Unsupported value: only Always is allowed in a workload template"
        )
    if policy not in ("Always", "OnFailure", "Never"):
        errors.append(f"{path}.restartPolicy: Unsupported value: {policy!r}")
    node = spec.get("nodeName", "")
    if node and (not DNS1123_SUBDOMAIN.match(node) or len(node) > 253):
        errors.append(f"{path}.nodeName: Invalid value: {node!r}")
    for index, secret in enumerate(spec.get("imagePullSecrets") or []):
        if not DNS1123_SUBDOMAIN.match(secret.get("name", "")):
            errors.append(f"{path}.imagePullSecrets[{index}].name: Invalid value: {secret.get('name')!r}")
    if spec.get("hostNetwork"):
        for section in ("initContainers", "containers"):
            for container in spec.get(section) or []:
                for port in container.get("ports") or []:
                    if port.get("hostPort", port["containerPort"]) != port["containerPort"]:
                        errors.append(f"{path}: hostPort must match containerPort when hostNetwork is set")
    return errors


def _selector_matches(selector: Obj, labels: Mapping[str, Any]) -> bool:
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if (operator == "In" and labels.get(key) not in values) or (
            operator == "NotIn" and labels.get(key) in values
        ):
            return False
        if (operator == "Exists" and key not in labels) or (operator == "DoesNotExist" and key in labels):
            return False
    return True


def _is_zero(value: Any) -> bool:
    return value in (0, "0%")


def workload_errors(obj: Obj) -> list[str]:
    kind, spec = obj["kind"], obj.get("spec") or {}
    template = spec.get("template") or {}
    errors = pod_spec_errors(template.get("spec") or {}, "spec.template.spec")
    errors += label_errors((template.get("metadata") or {}).get("labels"), "spec.template.metadata.labels")
    errors += annotation_errors(
        (template.get("metadata") or {}).get("annotations"), "spec.template.metadata.annotations"
    )
    selector = spec.get("selector") or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append("spec.selector: Invalid value: empty selector is invalid for a workload")
    elif not _selector_matches(selector, (template.get("metadata") or {}).get("labels") or {}):
        errors.append(
            "spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`"
        )
    strategy = spec.get("updateStrategy" if kind == "DaemonSet" else "strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    for field in ("maxSurge", "maxUnavailable"):
        if field in rolling:
            errors += int_or_percent_errors(rolling[field], f"spec.strategy.rollingUpdate.{field}")
    surge, unavailable = (
        rolling.get("maxSurge", 0 if kind == "DaemonSet" else "25%"),
        rolling.get("maxUnavailable", 1 if kind == "DaemonSet" else "25%"),
    )
    if _is_zero(surge) and _is_zero(unavailable):
        errors.append(
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: may not be 0 when `maxSurge` is 0"
        )
    if kind == "Deployment" and int(spec.get("replicas", 1)) < 0:
        errors.append("spec.replicas: Invalid value: must be greater than or equal to 0")
    return errors


def pod_errors(obj: Obj) -> list[str]:
    """A bare Pod, as gpu-handler creates its MPS daemons (``ValidatePodCreate``)."""
    spec = obj.get("spec") or {}
    errors = pod_spec_errors(spec, "spec", workload=False)
    if not (obj.get("metadata") or {}).get("namespace"):
        errors.append("metadata.namespace: Required value")
    return errors
