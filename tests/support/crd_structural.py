# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The structural-schema rules of the apiextensions-apiserver (``pkg/apiserver/schema/validation.go``:
``ValidateStructural``, its invariants and completeness check), for tests/support/crd_rules.py: every
node typed, the root's ``metadata`` restricting name and generateName only, nothing but value
validations under allOf, anyOf, oneOf and not, every field named there also specified outside,
and valid RE2 patterns. The messages follow the server's, field paths included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]  # the API server compiles patterns as Go RE2

Schema = Mapping[str, Any]
JUNCTORS = ("allOf", "anyOf", "oneOf")
# What a node under allOf/anyOf/oneOf/not must not carry (ForbiddenGenerics/Extensions).
FORBIDDEN_NESTED = {
    "type": "must be empty to be structural",
    "additionalProperties": "must be undefined to be structural",
    "default": "must be undefined to be structural",
    "title": "must be empty to be structural",
    "description": "must be empty to be structural",
    "nullable": "must be false to be structural",
    "x-kubernetes-preserve-unknown-fields": "must be false to be structural",
    "x-kubernetes-embedded-resource": "must be false to be structural",
    "x-kubernetes-int-or-string": "must be false to be structural",
    "x-kubernetes-list-map-keys": "must be empty to be structural",
    "x-kubernetes-list-type": "must be undefined to be structural",
}
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def property_path(path: str, name: str) -> str:
    return f"{path}.properties[{name}]"


def _is_int_or_string_any_of(schema: Schema) -> bool:
    return schema.get("anyOf") == INT_OR_STRING


def _is_int_or_string_all_of(schema: Schema) -> bool:
    all_of = schema.get("allOf") or []
    return bool(all_of) and all_of[0].get("anyOf") == INT_OR_STRING


def structural_errors(root: Schema, path: str) -> list[str]:
    """``ValidateStructural``: invariants and completeness; sorted like the server's list."""
    errors = list(_invariants(root, "root", path))
    errors += _completeness(root, path)
    return sorted(errors)


def _invariants(schema: Schema, level: str, path: str) -> Iterator[str]:
    kind = schema.get("type", "")
    if kind == "array" and "items" not in schema:
        yield f"{path}.items: Required value: must be specified"
    if isinstance(schema.get("items"), Mapping):
        yield from _invariants(schema["items"], "item", f"{path}.items")
    for name, child in (schema.get("properties") or {}).items():
        yield from _invariants(child, "field", property_path(path, name))
    additional = schema.get("additionalProperties")
    if additional is not None:
        if level == "root":
            yield f"{path}.additionalProperties: Forbidden: must not be used at the root"
        if isinstance(additional, Mapping):
            yield from _invariants(additional, "field", f"{path}.additionalProperties")
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        yield f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
    if int_or_string and embedded:
        yield f"{path}.x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
    yield from _value_validation(
        schema, _is_int_or_string_any_of(schema), _is_int_or_string_all_of(schema), path
    )
    if embedded and kind != "object":
        yield f"{path}.type: Required value: must be object if x-kubernetes-embedded-resource is true"
    elif not kind and not int_or_string and not preserve:
        where = {
            "root": "at the root",
            "item": "for specified array items",
            "field": "for specified object fields",
        }
        yield f"{path}.type: Required value: must not be empty {where[level]}"
    if embedded and additional is not None:
        yield f"{path}.additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"
    if level == "root" and kind and kind != "object":
        yield f'{path}.type: Invalid value: "{kind}": must be object at the root'
    properties = schema.get("properties") or {}
    if level == "root" or embedded:
        for name in ("kind", "apiVersion"):
            if name in properties and properties[name].get("type") != "string":
                yield f'{property_path(path, name)}.type: Invalid value: "{properties[name].get("type", "")}": must be string'
        if "metadata" in properties and properties["metadata"].get("type") != "object":
            yield f'{property_path(path, "metadata")}.type: Invalid value: "{properties["metadata"].get("type", "")}": must be object'
    if level == "root" and "metadata" in properties:
        yield from _root_metadata(properties["metadata"], property_path(path, "metadata"))
    if embedded and not preserve and not properties:
        yield f"{path}.properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"


def _root_metadata(metadata: Schema, path: str) -> Iterator[str]:
    """Only ``type: object`` and restrictions of name and generateName; not even a description."""
    rest = {key: value for key, value in metadata.items() if key not in ("type", "default")}
    names = set(rest.get("properties") or {})
    if names and names <= {"name", "generateName"}:
        rest.pop("properties")
    if rest:
        yield f"{path}: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"


def _value_validation(
    schema: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool, path: str
) -> Iterator[str]:
    if not skip_any_of:
        for index, nested in enumerate(schema.get("anyOf") or []):
            yield from _nested(nested, False, f"{path}.anyOf[{index}]")
    for index, nested in enumerate(schema.get("allOf") or []):
        yield from _nested(nested, skip_first_all_of_any_of and index == 0, f"{path}.allOf[{index}]")
    for index, nested in enumerate(schema.get("oneOf") or []):
        yield from _nested(nested, False, f"{path}.oneOf[{index}]")
    if isinstance(schema.get("not"), Mapping):
        yield from _nested(schema["not"], False, f"{path}.not")
    pattern = schema.get("pattern")
    if pattern:
        try:
            re2.compile(pattern)
        except re2.error as error:
            yield f'{path}.pattern: Invalid value: "{pattern}": must be a valid regular expression, but isn\'t: {error}'


def _nested(schema: Schema, skip_any_of: bool, path: str) -> Iterator[str]:
    yield from _value_validation(schema, skip_any_of, False, path)
    if isinstance(schema.get("items"), Mapping):
        yield from _nested(schema["items"], False, f"{path}.items")
    for name, child in (schema.get("properties") or {}).items():
        yield from _nested(child, False, property_path(path, name))
    for key, message in FORBIDDEN_NESTED.items():
        if schema.get(key) not in (None, False, "", []):
            yield f"{path}.{key}: Forbidden: {message}"
    if "metadata" in (schema.get("properties") or {}):
        yield f"{property_path(path, 'metadata')}: Forbidden: must not be specified in a nested context"


def _completeness(schema: Schema, path: str) -> list[str]:
    """Every field or item named inside a junctor is also specified outside of it."""
    errors: list[str] = []

    def outside(node: Schema, nested: Schema, where: str, fld: str) -> None:
        for name, child in (nested.get("properties") or {}).items():
            inner = (node.get("properties") or {}).get(name)
            if inner is None:
                errors.append(
                    f"{property_path(fld, name)}: Required value: because it is defined in {property_path(where, name)}"
                )
            else:
                outside(inner, child, property_path(where, name), property_path(fld, name))
        if isinstance(nested.get("items"), Mapping):
            if not isinstance(node.get("items"), Mapping):
                errors.append(f"{fld}.items: Required value: because it is defined in {where}.items")
            else:
                outside(node["items"], nested["items"], f"{where}.items", f"{fld}.items")
        for junctor in JUNCTORS:
            for index, deeper in enumerate(nested.get(junctor) or []):
                outside(node, deeper, f"{where}.{junctor}[{index}]", fld)
        if isinstance(nested.get("not"), Mapping):
            outside(node, nested["not"], f"{where}.not", fld)

    def walk(node: Schema, fld: str) -> None:
        for junctor in JUNCTORS:
            for index, nested in enumerate(node.get(junctor) or []):
                outside(node, nested, f"{fld}.{junctor}[{index}]", fld)
        if isinstance(node.get("not"), Mapping):
            outside(node, node["not"], f"{fld}.not", fld)
        for name, child in (node.get("properties") or {}).items():
            walk(child, property_path(fld, name))
        if isinstance(node.get("items"), Mapping):
            walk(node["items"], f"{fld}.items")
        if isinstance(node.get("additionalProperties"), Mapping):
            walk(node["additionalProperties"], f"{fld}.additionalProperties")

    walk(schema, path)
    return errors
