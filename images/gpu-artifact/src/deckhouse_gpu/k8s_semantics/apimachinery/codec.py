# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Conversion between domain dataclasses and Kubernetes-style JSON (camelCase, omitted nulls).

Field names are derived from the Python names (``kernel_release`` -> ``kernelRelease``); a field
whose JSON name differs from that rule says so with ``json_name``. Decoding ignores unknown
keys (newer writers may add fields) but rejects a value of the wrong type, naming its path.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from typing import Any

JSON_NAME = "json"


class DecodeError(ValueError):
    """A JSON value does not fit the model; the message names the offending path."""


def json_name(name: str) -> dict[str, str]:
    """Field metadata for a JSON name that the camelCase rule would not produce."""
    return {JSON_NAME: name}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def field_key(field: dataclasses.Field[Any]) -> str:
    return str(field.metadata.get(JSON_NAME, camel(field.name)))


def encode(value: Any) -> Any:
    """Turns a dataclass tree into plain JSON data, leaving out fields that are None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if item is not None:
                out[field_key(field)] = encode(item)
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    return value


def decode[T](cls: type[T], data: Any, path: str = "") -> T:
    """Builds ``cls`` from JSON data; raises DecodeError with the path of a bad value."""
    return typing.cast(T, _decode_value(cls, data, path or cls.__name__))


def _decode_value(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        if data is None:
            return None
        return _decode_value(options[0], data, path)
    if origin is list:
        if not isinstance(data, list):
            raise DecodeError(f"{path}: expected a list, got {type(data).__name__}")
        (item_type,) = typing.get_args(tp)
        return [_decode_value(item_type, item, f"{path}[{i}]") for i, item in enumerate(data)]
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(str(member.value) for member in tp)
            raise DecodeError(f"{path}: {data!r} is not one of {allowed}") from None
    return _decode_scalar(tp, data, path)


def _decode_scalar(tp: Any, data: Any, path: str) -> Any:
    # bool is a subclass of int in Python but never a valid integer in JSON schemas.
    if tp is int and isinstance(data, int) and not isinstance(data, bool):
        return data
    if tp is float and isinstance(data, int | float) and not isinstance(data, bool):
        return float(data)
    if tp in (str, bool) and isinstance(data, tp):
        return data
    raise DecodeError(f"{path}: expected {getattr(tp, '__name__', tp)}, got {type(data).__name__}")


def _decode_dataclass(cls: Any, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(f"{path}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        key = field_key(field)
        if key in data:
            kwargs[field.name] = _decode_value(hints[field.name], data[key], f"{path}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as error:
        raise DecodeError(f"{path}: {error}") from None


def openapi_schema(tp: Any) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a model: types, properties, enums and list items.

    Used to keep the CRD in sync with the models; descriptions live only in the CRD.
    """
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return openapi_schema(inner)
    if origin is list:
        (item_type,) = typing.get_args(tp)
        return {"type": "array", "items": openapi_schema(item_type)}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        properties = {field_key(f): openapi_schema(hints[f.name]) for f in dataclasses.fields(tp)}
        return {"type": "object", "properties": properties}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"type": "string", "enum": [member.value for member in tp]}
    scalar = {str: "string", int: "integer", bool: "boolean", float: "number"}
    return {"type": scalar[tp]}
