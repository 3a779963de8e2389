# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where a pod may run, as the API server checks it (``pkg/apis/core/validation``), for the semantic
rules of tests/support/k8s_semantics.py: node selector requirements, the node field selector that
allows only ``metadata.name`` with one value, affinity terms and tolerations.
"""

from __future__ import annotations

from collections.abc import Iterable

from tests.support.k8s_names import Obj, qualified_name_errors

TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
SELECTOR_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}


def node_selector_requirement_errors(requirement: Obj, path: str) -> list[str]:
    operator, values = requirement.get("operator"), requirement.get("values") or []
    errors = qualified_name_errors(requirement.get("key", ""), f"{path}.key")
    if operator not in SELECTOR_OPERATORS:
        errors.append(f'{path}.operator: Invalid value: "{operator}": not a valid selector operator')
    elif operator in ("In", "NotIn") and not values:
        errors.append(f"{path}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            f"{path}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    elif operator in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
        errors.append(
            f"{path}.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
        )
    return errors


def node_field_requirement_errors(requirement: Obj, path: str) -> list[str]:
    """``ValidateNodeFieldSelectorRequirement``: metadata.name only, In/NotIn with exactly one value."""
    errors = []
    if requirement.get("key") != "metadata.name":
        errors.append(
            f'{path}.key: Invalid value: "{requirement.get("key")}": not a valid field selector key'
        )
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator not in ("In", "NotIn"):
        errors.append(f'{path}.operator: Invalid value: "{operator}": not a valid selector operator')
    elif len(values) != 1:
        errors.append(
            f"{path}.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
        )
    return errors


def affinity_errors(affinity: Obj | None, path: str) -> list[str]:
    errors: list[str] = []
    node = (affinity or {}).get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        at = f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not terms:
            errors.append(f"{at}: Required value: must have at least one node selector term")
        for t, term in enumerate(terms):
            for r, requirement in enumerate(term.get("matchExpressions") or []):
                errors += node_selector_requirement_errors(requirement, f"{at}[{t}].matchExpressions[{r}]")
            for r, requirement in enumerate(term.get("matchFields") or []):
                errors += node_field_requirement_errors(requirement, f"{at}[{t}].matchFields[{r}]")
    for kind in ("podAffinity", "podAntiAffinity"):
        for w, weighted in enumerate(
            (affinity or {}).get(kind, {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ):
            at = f"{path}.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{w}]"
            if not 1 <= int(weighted.get("weight", 0)) <= 100:
                errors.append(f"{at}.weight: Invalid value: must be in the range 1-100")
            if not weighted.get("podAffinityTerm", {}).get("topologyKey"):
                errors.append(f"{at}.podAffinityTerm.topologyKey: Required value: can not be empty")
    return errors


def toleration_errors(tolerations: Iterable[Obj], path: str) -> list[str]:
    errors = []
    for index, toleration in enumerate(tolerations):
        at = f"{path}[{index}]"
        key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
        if key:
            errors += qualified_name_errors(key, f"{at}.key")
        elif operator != "Exists":
            errors.append(
                f"{at}.operator: Invalid value: {operator!r}: operator must be Exists when `key` is empty"
            )
        if operator == "Exists" and toleration.get("value"):
            errors.append(f"{at}.operator: Invalid value: value must be empty when `operator` is 'Exists'")
        if operator not in ("Equal", "Exists"):
            errors.append(f"{at}.operator: Unsupported value: {operator!r}")
        effect = toleration.get("effect", "")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(f"{at}.effect: Unsupported value: {effect!r}")
        if "tolerationSeconds" in toleration and effect != "NoExecute":
            errors.append(
                f"{at}.effect: Invalid value: effect must be 'NoExecute' when `tolerationSeconds` is set"
            )
    return errors
