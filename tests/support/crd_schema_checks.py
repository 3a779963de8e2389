# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The static checks of a CRD's schema in the apiextensions-apiserver (``pkg/apis/apiextensions/
validation/validation.go``: ``ValidateCustomResourceDefinitionOpenAPISchema`` with the v3 standard
validator of a v1 CRD), for tests/support/crd_rules.py: types, unsupported keywords, defaults under
metadata, list and map types and the keys of map lists. The messages follow the server's, field
paths included.
"""

from __future__ import annotations

from collections.abc import Mapping

from tests.support.crd_structural import JUNCTORS, Schema, property_path

TYPES = {"array", "boolean", "integer", "number", "object", "string"}
META_FIELDS = ("metadata", "apiVersion", "kind")
UNSUPPORTED = {
    "id": "id is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "$ref": "$ref is not supported",
}


def schema_errors(schema: Schema, path: str, *, root: bool = True, defaults: str | None = None) -> list[str]:
    """``ValidateCustomResourceDefinitionOpenAPISchema`` with the v3 validator of a v1 CRD."""
    errors: list[str] = []
    kind = schema.get("type", "")
    if kind and kind not in TYPES:
        errors.append(f'{path}.type: Unsupported value: "{kind}"')
    if "default" in schema and defaults is not None:
        errors.append(f"{path}.default: Forbidden: must not be set {defaults}")
    for key, message in UNSUPPORTED.items():
        if key in schema:
            errors.append(f"{path}.{key}: Forbidden: {message}")
    if kind == "null":
        errors.append(f"{path}.type: Forbidden: type cannot be set to null, use nullable as an alternative")
    if isinstance(schema.get("items"), list):
        errors.append(f"{path}.items: Forbidden: items must be a schema object and not an array")
    if schema.get("uniqueItems") is True:
        errors.append(
            f"{path}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        )
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if additional is not None and properties and (additional is False or isinstance(additional, Mapping)):
        errors.append(
            f"{path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )
    if isinstance(additional, Mapping):
        errors += schema_errors(additional, f"{path}.additionalProperties", root=False, defaults=defaults)
    for name, child in properties.items():
        inner = defaults
        if root and name in META_FIELDS:
            inner = f"in top-level {name}"
        errors += schema_errors(child, property_path(path, name), root=False, defaults=inner)
    if isinstance(schema.get("not"), Mapping):
        errors += schema_errors(schema["not"], f"{path}.not", root=False, defaults=defaults)
    for junctor in JUNCTORS:
        for index, nested in enumerate(schema.get(junctor) or []):
            errors += schema_errors(nested, f"{path}.{junctor}[{index}]", root=False, defaults=defaults)
    if isinstance(schema.get("items"), Mapping):
        errors += schema_errors(schema["items"], f"{path}.items", root=False, defaults=defaults)
    errors += _extension_errors(schema, path)
    return errors


def _extension_errors(schema: Schema, path: str) -> list[str]:
    errors: list[str] = []
    kind = schema.get("type", "")
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        errors.append(
            f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        )
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        errors.append(
            f'{path}.type: Invalid value: "{kind}": must be object if x-kubernetes-map-type is specified'
        )
    if map_type is not None and map_type not in ("atomic", "granular"):
        errors.append(f'{path}.x-kubernetes-map-type: Unsupported value: "{map_type}"')
    list_type = schema.get("x-kubernetes-list-type")
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
    if list_type is not None and kind != "array":
        errors.append(
            f'{path}.type: Invalid value: "{kind}": must be array if x-kubernetes-list-type is specified'
        )
    elif list_type == "set" and items is not None:
        if items.get("type") == "array" and items.get("x-kubernetes-list-type", "atomic") != "atomic":
            errors.append(
                f"{path}.items.x-kubernetes-list-type: Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set"
            )
        if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errors.append(
                f"{path}.items.x-kubernetes-map-type: Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set"
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errors.append(f'{path}.x-kubernetes-list-type: Unsupported value: "{list_type}"')
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys and list_type != "map":
        errors.append(
            f"{path}.x-kubernetes-list-type: must be map if x-kubernetes-list-map-keys is non-empty"
        )
    if list_type == "map":
        errors += _map_list_errors(items, keys, path)
    if list_type in ("set", "map") and items is not None and items.get("nullable"):
        errors.append(
            f"{path}.items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is {list_type}"
        )
    return errors


def _map_list_errors(items: Schema | None, keys: list[str], path: str) -> list[str]:
    errors: list[str] = []
    if not keys:
        errors.append(
            f"{path}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        )
    if items is None:
        return [*errors, f"{path}.items: Required value: must have a schema if x-kubernetes-list-type is map"]
    if items.get("type") != "object":
        return [
            *errors,
            f"{path}.items.type: Invalid value: must be object if parent array's x-kubernetes-list-type is map",
        ]
    required = set(items.get("required") or [])
    for key in keys:
        prop = (items.get("properties") or {}).get(key)
        if prop is None:
            errors.append(
                f"{path}.x-kubernetes-list-map-keys: Invalid value: entries must all be names of item properties"
            )
            continue
        if prop.get("type") in ("array", "object"):
            errors.append(
                f"{property_path(path + '.items', key)}.type: Invalid value: must be a scalar type if parent array's x-kubernetes-list-type is map"
            )
        if key not in required and "default" not in prop:
            errors.append(
                f"{property_path(path + '.items', key)}.default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            )
        if prop.get("nullable"):
            errors.append(
                f"{property_path(path + '.items', key)}.nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
            )
    if len(set(keys)) != len(keys):
        errors.append(f"{path}.x-kubernetes-list-map-keys: Invalid value: must not contain duplicate entries")
    return errors
