# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Name and value formats, JSON shape helpers and node selectors for the ResourceSlice rules.

Each check appends Problems instead of raising, so one pass reports everything that is wrong.
The formats follow the Kubernetes 1.35 validation code as summarized in
KUBERNETES-FACTS.md F1.2 and F1.3.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem

MAX_SUBDOMAIN = 253
MAX_LABEL = 63
MAX_DOMAIN = 63  # driver names and the domain part of attribute keys
MAX_IDENTIFIER = 32

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(_LABEL)
_SUBDOMAIN_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_C_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LABEL_NAME_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# semver.org 2.0.0; [0-9] instead of \d because Python's \d also matches non-ASCII digits.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_PRE = rf"(?:{_NUMBER}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_SEMVER_RE = re.compile(
    rf"{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:-{_PRE}(?:\.{_PRE})*)?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?"
)


def show(value: Any) -> str:
    """A value as JSON, shortened so a 300-character name does not flood the message."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} chars)"


def is_semver(text: str) -> bool:
    return _SEMVER_RE.fullmatch(text) is not None


def as_map(value: Any, path: str, out: list[Problem]) -> Mapping[str, Any]:
    """A JSON object; absent or null reads as empty, anything else is reported."""
    if value is None or isinstance(value, Mapping):
        return value or {}
    out.append(Problem(path, f"{show(value)} is not a JSON object"))
    return {}


def as_list(value: Any, path: str, out: list[Problem]) -> list[Any]:
    if value is None or isinstance(value, list):
        return value or []
    out.append(Problem(path, f"{show(value)} is not a JSON array"))
    return []


def check_fields(value: Mapping[str, Any], known: Collection[str], path: str, out: list[Problem]) -> None:
    """Unknown keys: the API server drops them with a warning, so they are almost always typos."""
    for key in value:
        if key not in known:
            out.append(
                Problem(f"{path}.{key}" if path else key, "unknown field (the API server would drop it)")
            )


def check_string(value: Any, path: str, out: list[Problem]) -> str | None:
    if isinstance(value, str):
        return value
    out.append(Problem(path, "required" if value is None else f"{show(value)} is not a string"))
    return None


def check_dns_label(value: Any, path: str, out: list[Problem]) -> None:
    text = check_string(value, path, out)
    if text is not None and (len(text) > MAX_LABEL or not _LABEL_RE.fullmatch(text)):
        out.append(
            Problem(path, f"{show(text)} is not a DNS-1123 label (1-63 of [a-z0-9-], alphanumeric ends)")
        )


def is_dns_subdomain(text: str) -> bool:
    return len(text) <= MAX_SUBDOMAIN and _SUBDOMAIN_RE.fullmatch(text) is not None


def check_dns_subdomain(value: Any, path: str, out: list[Problem]) -> None:
    text = check_string(value, path, out)
    if text is not None and not is_dns_subdomain(text):
        out.append(Problem(path, f"{show(text)} is not a DNS-1123 subdomain (at most 253 characters)"))


def check_driver_name(value: Any, path: str, out: list[Problem], what: str = "driver name") -> None:
    """The CSI driver-name rule: ≤63 characters, a DNS subdomain after lower-casing."""
    text = check_string(value, path, out)
    if text is None:
        return
    if not text:
        out.append(Problem(path, f"the {what} must not be empty"))
    elif len(text) > MAX_DOMAIN:
        out.append(Problem(path, f"{show(text)}: the {what} is longer than {MAX_DOMAIN} characters"))
    elif not _SUBDOMAIN_RE.fullmatch(text.lower()):
        out.append(Problem(path, f"{show(text)}: the {what} is not a DNS-1123 subdomain"))


def check_qualified_name(key: str, path: str, out: list[Problem]) -> None:
    """An attribute or capacity key: ``id`` or ``domain/id``, id a C identifier of ≤32 characters."""
    parts = key.split("/")
    if len(parts) > 2:
        # 1.35 accepts this by accident (no branch); master rejects it and CEL splits at the first '/'.
        out.append(Problem(path, f"{show(key)} has more than one '/'"))
        return
    if len(parts) == 2:
        if not parts[0]:
            out.append(Problem(path, f"{show(key)}: the domain must not be empty"))
        else:
            check_driver_name(parts[0], path, out, what="domain")
    name = parts[-1]
    if not name:
        out.append(Problem(path, f"{show(key)}: the name must not be empty"))
    elif len(name) > MAX_IDENTIFIER:
        out.append(Problem(path, f"{show(key)}: the name is longer than {MAX_IDENTIFIER} characters"))
    elif not _C_IDENTIFIER_RE.fullmatch(name):
        out.append(Problem(path, f"{show(key)}: the name is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)"))


def check_label_key(value: Any, path: str, out: list[Problem]) -> None:
    """A label key (``IsQualifiedName``): ``[prefix/]name``, prefix a DNS subdomain, name ≤63."""
    key = check_string(value, path, out)
    if key is None:
        return
    parts = key.split("/")
    prefix_ok = len(parts) == 1 or (len(parts) == 2 and is_dns_subdomain(parts[0]))
    name = parts[-1]
    if not prefix_ok or len(name) > MAX_LABEL or not _LABEL_NAME_RE.fullmatch(name):
        out.append(Problem(path, f"{show(key)} is not a valid label key ([DNS-subdomain/]name, name ≤63)"))


def check_label_value(value: Any, path: str, out: list[Problem]) -> None:
    text = check_string(value, path, out)
    if text and (len(text) > MAX_LABEL or not _LABEL_NAME_RE.fullmatch(text)):
        out.append(Problem(path, f"{show(text)} is not a valid label value (≤63 of [A-Za-z0-9-_.])"))


def check_true(value: Any, path: str, out: list[Problem]) -> None:
    """``allNodes`` and ``perDeviceNodeSelection``: only true; leave them out instead of false."""
    if value is not True:
        out.append(Problem(path, f"{show(value)}: may only be set to true (omit the field instead)"))


def check_object_name(metadata: Mapping[str, Any], out: list[Problem]) -> None:
    """metadata.name, or generateName when the server picks the name."""
    if metadata.get("name"):
        check_dns_subdomain(metadata["name"], "metadata.name", out)
    elif not metadata.get("generateName"):
        out.append(Problem("metadata.name", "name or generateName is required"))
    prefix = metadata.get("generateName")
    if prefix is not None and check_string(prefix, "metadata.generateName", out) is not None:
        # Like the API server: a trailing '-' is masked (with the character before it) before the check.
        masked = f"{prefix[:-2]}a" if len(prefix) > 1 and prefix.endswith("-") else prefix
        if not is_dns_subdomain(masked):
            out.append(Problem("metadata.generateName", f"{show(prefix)} is not a DNS-1123 subdomain prefix"))


def check_node_selector(value: Any, path: str, out: list[Problem]) -> list[Any]:
    """A core NodeSelector as the API server validates it; returns its terms."""
    terms_path = f"{path}.nodeSelectorTerms"
    terms = as_list(as_map(value, path, out).get("nodeSelectorTerms"), terms_path, out)
    if not terms:
        out.append(Problem(terms_path, "must have at least one node selector term"))
    for index, term in enumerate(terms):
        term_path = f"{terms_path}[{index}]"
        term_map = as_map(term, term_path, out)
        for kind in ("matchExpressions", "matchFields"):
            kind_path = f"{term_path}.{kind}"
            for number, requirement in enumerate(as_list(term_map.get(kind), kind_path, out)):
                _check_requirement(requirement, f"{kind_path}[{number}]", kind == "matchFields", out)
    return terms


def _check_requirement(value: Any, path: str, by_field: bool, out: list[Problem]) -> None:
    requirement = as_map(value, path, out)
    operator = requirement.get("operator")
    values = as_list(requirement.get("values"), f"{path}.values", out)
    if by_field:
        # Node fields: only metadata.name, with In/NotIn and exactly one node name.
        if operator not in ("In", "NotIn"):
            out.append(Problem(f"{path}.operator", f"{show(operator)}: node field selectors allow In, NotIn"))
        if len(values) != 1:
            out.append(Problem(f"{path}.values", "must have exactly one value for a node field selector"))
        if requirement.get("key") != "metadata.name":
            out.append(
                Problem(f"{path}.key", f"{show(requirement.get('key'))} is not a node field (metadata.name)")
            )
        for index, name in enumerate(values):
            check_dns_subdomain(name, f"{path}.values[{index}]", out)
        return
    counts = {"In": None, "NotIn": None, "Exists": 0, "DoesNotExist": 0, "Gt": 1, "Lt": 1}
    if operator not in counts:
        out.append(Problem(f"{path}.operator", f"{show(operator)} is not one of {', '.join(counts)}"))
    elif counts[operator] is None and not values:
        out.append(Problem(f"{path}.values", f"must not be empty with operator {operator}"))
    elif counts[operator] is not None and len(values) != counts[operator]:
        out.append(
            Problem(f"{path}.values", f"must have {counts[operator]} value(s) with operator {operator}")
        )
    check_label_key(requirement.get("key"), f"{path}.key", out)
    for index, text in enumerate(values):
        check_label_value(text, f"{path}.values[{index}]", out)
