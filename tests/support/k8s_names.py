# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Names, labels, annotations and values as the API server checks them (``apimachinery``'s
validation and ``pkg/apis/core/validation``), for the semantic rules of tests/support/k8s_semantics.py:
DNS labels and subdomains, qualified names, label values, IANA port names, quantities and
int-or-percent values. Messages name the field path as the server does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")
MAX_ANNOTATIONS_BYTES = 256 * 1024


def qualified_name_errors(value: str, path: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS subdomain prefix and a name of at most 63 characters."""
    prefix, _, name = value.rpartition("/")
    errors = []
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        errors.append(f"{path}: Invalid value: {value!r}: prefix part must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        errors.append(
            f"{path}: Invalid value: {value!r}: name part must be a qualified name of at most 63 characters"
        )
    return errors


def label_errors(labels: Mapping[str, Any] | None, path: str) -> list[str]:
    errors = []
    for key, value in (labels or {}).items():
        errors += qualified_name_errors(key, f"{path}")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(
                f"{path}: Invalid value: {value!r}: a label value must be at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends"
            )
    return errors


def annotation_errors(annotations: Mapping[str, Any] | None, path: str) -> list[str]:
    errors = []
    total = 0
    for key, value in (annotations or {}).items():
        errors += qualified_name_errors(key, path)
        total += len(key) + len(str(value))
    if total > MAX_ANNOTATIONS_BYTES:
        errors.append(f"{path}: Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")
    return errors


def iana_port_name_errors(name: str, path: str) -> list[str]:
    if len(name) > 15 or not IANA_SVC_NAME.match(name) or "--" in name or not re.search("[a-z]", name):
        return [
            f"{path}: Invalid value: {name!r}: must be no more than 15 characters, lowercase alphanumerics and '-', with at least one letter and no '--'"
        ]
    return []


def quantity_errors(value: Any, path: str) -> list[str]:
    if isinstance(value, int) or (isinstance(value, str) and QUANTITY.match(value)):
        return []
    return [f"{path}: Invalid value: {value!r}: must match the regular expression of a quantity"]


_SUFFIX = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity_value(value: Any) -> float:
    text = str(value)
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text[-1:] in _SUFFIX and not text[-1:].isdigit():
        return float(text[:-1]) * _SUFFIX[text[-1]]
    return float(text)


def int_or_percent_errors(value: Any, path: str) -> list[str]:
    if isinstance(value, int) and value >= 0:
        return []
    if isinstance(value, str) and re.fullmatch(r"\d+%", value) and int(value[:-1]) <= 100:
        return []
    return [f"{path}: Invalid value: {value!r}: must be a non-negative integer or a percentage up to 100%"]
