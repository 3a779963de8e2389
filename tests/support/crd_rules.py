"""What a real API server checks in a CRD beyond its OpenAPI schema, in Python.

``kubernetes-validate`` checks a CRD against the OpenAPI schema of CustomResourceDefinition only,
which is how a PhysicalGPU CRD with a description under ``metadata`` passed every test and was
rejected by a real 1.35 API server. This module encodes the rules of the apiextensions-apiserver:
the structural-schema invariants (``pkg/apiserver/schema/validation.go``: ``ValidateStructural``,
its completeness check) and the static checks of the schema (``pkg/apis/apiextensions/validation/
validation.go``: ``ValidateCustomResourceDefinitionOpenAPISchema`` and the v3 standard validator,
list and map types, map-list keys), plus the printer-column and name rules of the same file. The
messages follow the server's, field paths included, so a failing test reads like ``kubectl``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]  # the API server compiles patterns as Go RE2

Schema = Mapping[str, Any]

TYPES = {"array", "boolean", "integer", "number", "object", "string"}
JUNCTORS = ("allOf", "anyOf", "oneOf")
META_FIELDS = ("metadata", "apiVersion", "kind")
UNSUPPORTED = {
    "id": "id is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "$ref": "$ref is not supported",
}
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
PRINTER_TYPES = {"integer", "number", "string", "boolean", "date"}
PRINTER_FORMATS = {"int32", "int64", "float", "double", "byte", "date", "date-time", "password"}
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _key(path: str, name: str) -> str:
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
        yield from _invariants(child, "field", _key(path, name))
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
                yield f'{_key(path, name)}.type: Invalid value: "{properties[name].get("type", "")}": must be string'
        if "metadata" in properties and properties["metadata"].get("type") != "object":
            yield f'{_key(path, "metadata")}.type: Invalid value: "{properties["metadata"].get("type", "")}": must be object'
    if level == "root" and "metadata" in properties:
        yield from _root_metadata(properties["metadata"], _key(path, "metadata"))
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
        yield from _nested(child, False, _key(path, name))
    for key, message in FORBIDDEN_NESTED.items():
        if schema.get(key) not in (None, False, "", []):
            yield f"{path}.{key}: Forbidden: {message}"
    if "metadata" in (schema.get("properties") or {}):
        yield f"{_key(path, 'metadata')}: Forbidden: must not be specified in a nested context"


def _completeness(schema: Schema, path: str) -> list[str]:
    """Every field or item named inside a junctor is also specified outside of it."""
    errors: list[str] = []

    def outside(node: Schema, nested: Schema, where: str, fld: str) -> None:
        for name, child in (nested.get("properties") or {}).items():
            inner = (node.get("properties") or {}).get(name)
            if inner is None:
                errors.append(
                    f"{_key(fld, name)}: Required value: because it is defined in {_key(where, name)}"
                )
            else:
                outside(inner, child, _key(where, name), _key(fld, name))
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
            walk(child, _key(fld, name))
        if isinstance(node.get("items"), Mapping):
            walk(node["items"], f"{fld}.items")
        if isinstance(node.get("additionalProperties"), Mapping):
            walk(node["additionalProperties"], f"{fld}.additionalProperties")

    walk(schema, path)
    return errors


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
        errors += schema_errors(child, _key(path, name), root=False, defaults=inner)
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
                f"{_key(path + '.items', key)}.type: Invalid value: must be a scalar type if parent array's x-kubernetes-list-type is map"
            )
        if key not in required and "default" not in prop:
            errors.append(
                f"{_key(path + '.items', key)}.default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            )
        if prop.get("nullable"):
            errors.append(
                f"{_key(path + '.items', key)}.nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
            )
    if len(set(keys)) != len(keys):
        errors.append(f"{path}.x-kubernetes-list-map-keys: Invalid value: must not contain duplicate entries")
    return errors


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
    """Every rule above over a whole v1 CRD: names, versions, schemas, printer columns."""
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
