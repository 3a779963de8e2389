# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The RBAC of each ServiceAccount as the Helm-rendered chart grants it, checked against the rights
the components used (testkit/api_access.py): what a component asked for that its RBAC lacks, and
what its RBAC grants that no component asked for.

A rule is a Role's or ClusterRole's entry with the namespace its binding gives it ("" when a
ClusterRoleBinding grants it cluster-wide), and the comment written right above it in the chart
(``helm template`` keeps comments). A granted right no recorded run used is allowed only when that
comment names the verb and says why (a path the runs do not reach, an upgrade in progress).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from testkit.api_access import Access, AccessLog
from tests.support.helm_chart import Rendered

ROLE_KINDS = ("Role", "ClusterRole")
# ClusterRoles the platform provides, bound by the chart and never rendered by it, with the rules
# Deckhouse gives them: d8:rbac-proxy lets a pod's kube-rbac-proxy sidecar review the tokens and
# the access of its callers (templates/_kube_rbac_proxy.tpl).
PLATFORM_CLUSTER_ROLES: dict[str, list[dict[str, list[str]]]] = {
    "d8:rbac-proxy": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ],
}
_RULE_START = re.compile(r"^\s*- apiGroups:")


@dataclass(frozen=True)
class Rule:
    role: str  # "ClusterRole d8:gpu:gpu-handler", "Role d8-gpu/gpu-handler:mps-daemons"
    namespace: str  # where the binding grants it; "" cluster-wide
    groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]
    names: frozenset[str]
    comment: str

    def allows(self, access: Access, name: str = "") -> bool:
        if access.path or (self.namespace and access.namespace != self.namespace):
            return False
        return (
            bool({access.group, "*"} & self.groups)
            and bool({access.resource_path, "*"} & self.resources)
            and bool({access.verb, "*"} & self.verbs)
            and (not self.names or name in self.names)
        )

    def rights(self) -> list[tuple[str, str, str]]:
        """(verb, group, resource) of every right the rule grants."""
        return sorted((v, g, r) for v in self.verbs for g in self.groups for r in self.resources)

    def __str__(self) -> str:
        where = f"in {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.role} ({where})"


@functools.cache
def documents(text: str) -> list[tuple[dict[str, Any], str]]:
    """Each object of ``helm template``'s output with the text it was rendered from (parsed once
    per output: do not change what it returns)."""
    found = []
    for document in re.split(r"^---$", text, flags=re.M):
        obj = yaml.safe_load(document)
        if isinstance(obj, dict):
            found.append((obj, document))
    return found


def comments(document: str) -> str:
    """The comment lines of a rendered document, joined."""
    return " ".join(
        line.strip().lstrip("#").strip() for line in document.splitlines() if line.strip().startswith("#")
    )


@functools.cache
def _rule_comments(text: str) -> dict[tuple[str, str, str], list[str]]:
    """The comment right above each rule of every Role and ClusterRole, by (kind, namespace, name)."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for obj, document in documents(text):
        if obj.get("kind") not in ROLE_KINDS:
            continue
        lines, comments = document.splitlines(), []
        for index, line in enumerate(lines):
            if _RULE_START.match(line):
                above: list[str] = []
                for previous in reversed(lines[:index]):
                    if not previous.strip().startswith("#"):
                        break
                    above.insert(0, previous.strip().lstrip("#").strip())
                comments.append(" ".join(above))
        meta = obj["metadata"]
        found[(obj["kind"], meta.get("namespace") or "", meta["name"])] = comments
    return found


def _bound(binding: dict[str, Any], account: str, namespace: str) -> bool:
    return any(
        s.get("kind") == "ServiceAccount" and s.get("name") == account and s.get("namespace") == namespace
        for s in binding.get("subjects") or []
    )


def service_account_rules(rendered: Rendered, account: str, namespace: str = "d8-gpu") -> list[Rule]:
    """Every rule bound to the ServiceAccount, with the scope its binding gives it."""
    comments = _rule_comments(rendered.text)
    rules: list[Rule] = []
    bindings = [(b, "") for b in rendered.of_kind("ClusterRoleBinding")]
    bindings += [(b, b["metadata"]["namespace"]) for b in rendered.of_kind("RoleBinding")]
    for binding, scope in bindings:
        if not _bound(binding, account, namespace):
            continue
        ref = binding["roleRef"]
        role_namespace = scope if ref["kind"] == "Role" else ""
        role = next(
            (
                o
                for o in rendered.of_kind(ref["kind"])
                if o["metadata"]["name"] == ref["name"]
                and (o["metadata"].get("namespace") or "") == role_namespace
            ),
            None,
        )
        if role is None and ref["kind"] == "ClusterRole" and ref["name"] in PLATFORM_CLUSTER_ROLES:
            role = {"rules": PLATFORM_CLUSTER_ROLES[ref["name"]]}
        if role is None:
            raise LookupError(f"{binding['metadata']['name']}: no {ref['kind']} {ref['name']}")
        notes = comments.get((ref["kind"], role_namespace, ref["name"]), [])
        label = f"{ref['kind']} {role_namespace + '/' if role_namespace else ''}{ref['name']}"
        for index, raw in enumerate(role.get("rules") or []):
            rules.append(
                Rule(
                    label,
                    scope,
                    frozenset(raw.get("apiGroups") or []),
                    frozenset(raw.get("resources") or []),
                    frozenset(raw.get("verbs") or []),
                    frozenset(raw.get("resourceNames") or []),
                    notes[index] if index < len(notes) else "",
                )
            )
    return rules


def missing_rights(accesses: Iterable[Access], rules: list[Rule]) -> list[Access]:
    """The resource requests no rule allows (non-resource URLs such as /version aside: every
    authenticated user may read them, system:public-info-viewer)."""
    return sorted(a for a in accesses if not a.path and not any(rule.allows(a) for rule in rules))


@dataclass(frozen=True)
class Unused:
    rule: Rule
    verb: str
    group: str
    resource: str
    explained: bool  # the rule's comment names the verb

    def __str__(self) -> str:
        return f"{self.rule}: {self.verb} {self.resource} ({self.group or 'core'}) never used"


def unused_rights(log: AccessLog, component: str, rules: list[Rule]) -> list[Unused]:
    """The rights the rules grant that none of the component's requests used."""
    accesses = log.of_component(component)
    found = []
    for rule in rules:
        for verb, group, resource in rule.rights():
            used = any(
                rule.allows(a) and a.verb == verb and a.group == group and a.resource_path == resource
                for a in accesses
            )
            if not used:
                explained = re.search(rf"\b{re.escape(verb)}\b", rule.comment) is not None
                found.append(Unused(rule, verb, group, resource, explained))
    return found
