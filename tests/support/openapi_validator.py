# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A small OpenAPI validator for the keywords the CRD uses, to check encoded model values."""

from __future__ import annotations

import datetime
import re
from typing import Any

from tests.support.crd_schema import Schema

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
}


def has_type(kind: str, value: Any) -> bool:
    # bool is an int in Python but never a JSON integer.
    return isinstance(value, JSON_TYPES[kind]) and not (kind == "integer" and isinstance(value, bool))


def validate(schema: Schema, value: Any, path: str = "status") -> list[str]:
    """A small OpenAPI validator for the keywords the CRD uses, to check encoded model values."""
    kind = schema["type"]
    if not has_type(kind, value):
        return [f"{path}: {value!r} is not {kind}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and not re.fullmatch(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value} < {schema['minimum']}")
    if schema.get("format") == "date-time":
        try:
            datetime.datetime.fromisoformat(value)
        except ValueError:
            errors.append(f"{path}: {value!r} is not a date-time")
    if kind == "object":
        properties = schema.get("properties", {})
        errors.extend(f"{path}.{key}: required" for key in schema.get("required", []) if key not in value)
        for key, item in value.items():
            if key not in properties:
                errors.append(f"{path}.{key}: not in the CRD (the API server would prune it)")
            else:
                errors.extend(validate(properties[key], item, f"{path}.{key}"))
    if kind == "array":
        for index, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{path}[{index}]"))
    return errors
