# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Reading and writing the checkpoint's flat records (domain/prepare/checkpoint.py): each field
checked against its type on the way in, unset ones left out on the way out. Pure."""

from __future__ import annotations

from typing import Any


class CorruptCheckpoint(ValueError):
    """The bytes are not a checkpoint this reader can trust; ``reason`` says what is wrong where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Python field -> (JSON key, type, required); keys are camelCase with "ID" as Kubernetes writes it.
type Fields = dict[str, tuple[str, type, bool]]

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object", list: "a list"}


def flat_json(value: object, fields: Fields) -> dict[str, Any]:
    """The fields as JSON, leaving out the unset (None) ones."""
    present = ((key, getattr(value, name)) for name, (key, _, _) in fields.items())
    return {key: item for key, item in present if item is not None}


def get(obj: dict[str, Any], key: str, path: str, kind: type, required: bool = True) -> Any:
    """``obj[key]`` checked against ``kind``; unknown keys next to it are simply never asked for."""
    where = f"{path}.{key}" if path else key
    value = obj.get(key)
    if value is None:
        if required:
            raise CorruptCheckpoint(f"{where}: missing")
        return None
    # bool is an int subclass in Python, never an integer in the file.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CorruptCheckpoint(f"{where}: expected {_TYPE_NAMES[kind]}, got {type(value).__name__}")
    return value


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CorruptCheckpoint(f"{path}: expected an object, got {type(value).__name__}")
    return value


def flat_values(raw: Any, path: str, fields: Fields) -> dict[str, Any]:
    obj = as_object(raw, path)
    return {name: get(obj, key, path, kind, required) for name, (key, kind, required) in fields.items()}


def one_of[T: str](value: str, where: str, allowed: tuple[T, ...]) -> T:
    if value not in allowed:
        raise CorruptCheckpoint(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def strings(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CorruptCheckpoint(f"{path}: expected a list of strings")
    return tuple(value)
