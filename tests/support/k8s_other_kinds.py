# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The other kinds the module renders, as the API server checks them, for the semantic rules of
tests/support/k8s_semantics.py: Services, PodDisruptionBudgets (``pkg/apis/policy/validation``),
admission webhooks and ValidatingAdmissionPolicies with their bindings
(``pkg/apis/admissionregistration/validation``), and RBAC roles.
"""

from __future__ import annotations

from tests.support.k8s_names import (
    C_IDENTIFIER,
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    Obj,
    iana_port_name_errors,
    int_or_percent_errors,
    label_errors,
    qualified_name_errors,
)


def service_errors(obj: Obj) -> list[str]:
    errors = []
    name = obj["metadata"]["name"]
    if not DNS1035_LABEL.match(name) or len(name) > 63:
        errors.append(f"metadata.name: Invalid value: {name!r}: a Service name must be a DNS-1035 label")
    ports = (obj.get("spec") or {}).get("ports") or []
    seen: set[str] = set()
    for index, port in enumerate(ports):
        at = f"spec.ports[{index}]"
        if len(ports) > 1 and not port.get("name"):
            errors.append(f"{at}.name: Required value")
        if port.get("name"):
            if not DNS1123_LABEL.match(port["name"]):
                errors.append(f"{at}.name: Invalid value: {port['name']!r}: must be a DNS-1123 label")
            if port["name"] in seen:
                errors.append(f"{at}.name: Duplicate value: {port['name']!r}")
            seen.add(port["name"])
        if not 1 <= int(port.get("port", 0)) <= 65535:
            errors.append(f"{at}.port: Invalid value: must be between 1 and 65535")
        target = port.get("targetPort")
        if isinstance(target, str):
            errors += iana_port_name_errors(target, f"{at}.targetPort")
    errors += label_errors((obj.get("spec") or {}).get("selector"), "spec.selector")
    return errors


def pdb_errors(obj: Obj) -> list[str]:
    spec = obj.get("spec") or {}
    errors = []
    if "minAvailable" in spec and "maxUnavailable" in spec:
        errors.append("spec: Invalid value: minAvailable and maxUnavailable cannot be both set")
    for field in ("minAvailable", "maxUnavailable"):
        if field in spec:
            errors += int_or_percent_errors(spec[field], f"spec.{field}")
    return errors


def webhook_errors(obj: Obj) -> list[str]:
    errors = []
    names: set[str] = set()
    for index, webhook in enumerate(obj.get("webhooks") or []):
        at = f"webhooks[{index}]"
        name = webhook.get("name", "")
        if not DNS1123_SUBDOMAIN.match(name) or name.count(".") < 2:
            errors.append(
                f"{at}.name: Invalid value: {name!r}: should be a domain with at least three segments separated by dots"
            )
        if name in names:
            errors.append(f"{at}.name: Duplicate value: {name!r}")
        names.add(name)
        versions = webhook.get("admissionReviewVersions") or []
        if not {"v1", "v1beta1"} & set(versions):
            errors.append(
                f"{at}.admissionReviewVersions: Required value: must include at least one of v1, v1beta1"
            )
        if webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            errors.append(f"{at}.sideEffects: Unsupported value: {webhook.get('sideEffects')!r}")
        if not 1 <= int(webhook.get("timeoutSeconds", 10)) <= 30:
            errors.append(
                f"{at}.timeoutSeconds: Invalid value: the timeout value must be between 1 and 30 seconds"
            )
        client = webhook.get("clientConfig") or {}
        if ("url" in client) == ("service" in client):
            errors.append(f"{at}.clientConfig: Required value: exactly one of url or service is required")
        service = client.get("service") or {}
        if "path" in service and not str(service["path"]).startswith("/"):
            errors.append(f"{at}.clientConfig.service.path: Invalid value: must start with a '/'")
        if not 1 <= int(service.get("port", 443)) <= 65535:
            errors.append(f"{at}.clientConfig.service.port: Invalid value: port is not valid")
        errors += _match_condition_errors(webhook.get("matchConditions") or [], f"{at}.matchConditions")
        for r, rule in enumerate(webhook.get("rules") or []):
            for field in ("operations", "apiGroups", "apiVersions", "resources"):
                values = rule.get(field) or []
                if not values:
                    errors.append(f"{at}.rules[{r}].{field}: Required value")
                if "*" in values and len(values) > 1:
                    errors.append(
                        f"{at}.rules[{r}].{field}: Invalid value: if '*' is present, must not specify other values"
                    )
    return errors


def _match_condition_errors(conditions: list[Obj], path: str) -> list[str]:
    errors = []
    if len(conditions) > 64:
        errors.append(f"{path}: Too many: {len(conditions)}: must have at most 64 items")
    seen: set[str] = set()
    for index, condition in enumerate(conditions):
        name = condition.get("name", "")
        errors += qualified_name_errors(name, f"{path}[{index}].name")
        if name in seen:
            errors.append(f"{path}[{index}].name: Duplicate value: {name!r}")
        seen.add(name)
        if not condition.get("expression"):
            errors.append(f"{path}[{index}].expression: Required value")
    return errors


def policy_errors(obj: Obj) -> list[str]:
    spec = obj.get("spec") or {}
    errors = _match_condition_errors(spec.get("matchConditions") or [], "spec.matchConditions")
    if obj["kind"] == "ValidatingAdmissionPolicy":
        if not spec.get("validations") and not spec.get("auditAnnotations"):
            errors.append(
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item"
            )
        seen: set[str] = set()
        for index, variable in enumerate(spec.get("variables") or []):
            name = variable.get("name", "")
            if not C_IDENTIFIER.match(name):
                errors.append(
                    f"spec.variables[{index}].name: Invalid value: {name!r}: must be a C identifier"
                )
            if name in seen:
                errors.append(f"spec.variables[{index}].name: Duplicate value: {name!r}")
            seen.add(name)
        for index, validation in enumerate(spec.get("validations") or []):
            reason = validation.get("reason")
            if reason not in (None, "Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"):
                errors.append(f"spec.validations[{index}].reason: Unsupported value: {reason!r}")
    else:
        actions = spec.get("validationActions") or []
        if not actions or len(set(actions)) != len(actions) or not set(actions) <= {"Deny", "Warn", "Audit"}:
            errors.append(
                "spec.validationActions: Invalid value: must be a non-empty set of Deny, Warn, Audit"
            )
        if {"Deny", "Warn"} <= set(actions):
            errors.append("spec.validationActions: Invalid value: must not contain both Deny and Warn")
        if not spec.get("policyName"):
            errors.append("spec.policyName: Required value")
    return errors


def rbac_errors(obj: Obj) -> list[str]:
    errors = []
    for index, rule in enumerate(obj.get("rules") or []):
        if not rule.get("verbs"):
            errors.append(f"rules[{index}].verbs: Required value: verbs must contain at least one value")
        if rule.get("nonResourceURLs") and obj.get("kind") == "Role":
            errors.append(
                f"rules[{index}].nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs"
            )
        if not rule.get("nonResourceURLs") and not rule.get("resources"):
            errors.append(
                f"rules[{index}].resources: Required value: resource rules must supply at least one resource"
            )
    return errors
