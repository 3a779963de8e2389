# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a real API server checks in a CRD beyond its OpenAPI schema, in Python.

``kubernetes-validate`` checks a CRD against the OpenAPI schema of CustomResourceDefinition only,
which is how a PhysicalGPU CRD with a description under ``metadata`` passed every test and was
rejected by a real 1.35 API server. This module encodes the rules of the apiextensions-apiserver:
the structural-schema invariants (``pkg/apiserver/schema/validation.go``: ``ValidateStructural``,
its completeness check) and the static checks of the schema (``pkg/apis/apiextensions/validation/
validation.go``: ``ValidateCustomResourceDefinitionOpenAPISchema`` and the v3 standard validator,
list and map types, map-list keys), plus the printer-column and name rules of the same file. The
messages follow the server's, field paths included, so a failing test reads like ``kubectl``.

The structural-schema rules are in crd_structural.py, the static checks of the schema in
crd_schema_checks.py; this module adds the printer-column and name rules and applies them all to a
whole CRD.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tests.support.crd_schema_checks import schema_errors
from tests.support.crd_structural import structural_errors

__all__ = ["crd_errors", "printer_column_errors", "schema_errors", "structural_errors"]

PRINTER_TYPES = {"integer", "number", "string", "boolean", "date"}
PRINTER_FORMATS = {"int32", "int64", "float", "double", "byte", "date", "date-time", "password"}
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def printer_column_errors(columns: list[Mapping[str, Any]], path: str) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    for index, column in enumerate(columns):
        at = f"{path}[{index}]"
        name = column.get("name", "")
        if not name:
            errors.append(f"{at}.name: Required value")
        if name in seen:
            errors.append(f"{at}.name: Duplicate value: {name!r}")
        seen.add(name)
        if column.get("type") not in PRINTER_TYPES:
            errors.append(f'{at}.type: Unsupported value: "{column.get("type")}"')
        if "format" in column and column["format"] not in PRINTER_FORMATS:
            errors.append(f'{at}.format: Unsupported value: "{column["format"]}"')
        if int(column.get("priority", 0)) < 0:
            errors.append(f"{at}.priority: Invalid value: must be non-negative")
        json_path = column.get("jsonPath", "")
        if not json_path.startswith("."):
            errors.append(
                f"{at}.jsonPath: Invalid value: {json_path!r}: must be a simple json path starting with ."
            )
    return errors


def crd_errors(crd: Mapping[str, Any]) -> list[str]:
    """Every rule over a whole v1 CRD: names, versions, schemas, printer columns."""
    errors: list[str] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")
    if crd.get("metadata", {}).get("name") != f"{plural}.{group}":
        errors.append('metadata.name: Invalid value: must be spec.names.plural+"."+spec.group')
    if not DNS1123_SUBDOMAIN.match(group) or group.count(".") < 1:
        errors.append("spec.group: Invalid value: should be a domain with at least one dot")
    for field in ("plural", "singular"):
        if not DNS1035.match(names.get(field, "")):
            errors.append(f"spec.names.{field}: Invalid value: must be a DNS-1035 label")
    for index, short in enumerate(names.get("shortNames") or []):
        if not DNS1035.match(short):
            errors.append(f"spec.names.shortNames[{index}]: Invalid value: must be a DNS-1035 label")
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errors.append("spec.names.listKind: Invalid value: kind and listKind may not be the same")
    versions = spec.get("versions") or []
    if sum(1 for version in versions if version.get("storage")) != 1:
        errors.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
    for index, version in enumerate(versions):
        at = f"spec.versions[{index}]"
        root = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        schema_path = f"{at}.schema.openAPIV3Schema"
        errors += schema_errors(root, schema_path)
        errors += structural_errors(root, schema_path)
        errors += printer_column_errors(
            version.get("additionalPrinterColumns") or [], f"{at}.additionalPrinterColumns"
        )
    return errors
