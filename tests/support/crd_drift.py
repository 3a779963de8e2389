# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where the CRD schema and the status models disagree: shapes, and which fields are required."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.codec import field_key
from tests.support.crd_schema import Schema


def differences(expected: Any, actual: Any, path: str = "status") -> list[str]:
    """Human-readable differences between two JSON values, each naming its path."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found: list[str] = []
        for key in sorted(expected.keys() - actual.keys()):
            found.append(f"{path}.{key}: in the models, missing in the CRD ({expected[key]!r})")
        for key in sorted(actual.keys() - expected.keys()):
            found.append(f"{path}.{key}: in the CRD, not in the models ({actual[key]!r})")
        for key in sorted(expected.keys() & actual.keys()):
            found.extend(differences(expected[key], actual[key], f"{path}.{key}"))
        return found
    if expected != actual:
        return [f"{path}: models say {expected!r}, the CRD says {actual!r}"]
    return []


def allows_none(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def required_mismatches(tp: Any, schema: Schema, path: str) -> list[str]:
    """Compares every object's ``required`` with the fields of its dataclass that cannot be None."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return required_mismatches(inner, schema, path)
    if origin is list:
        (item,) = typing.get_args(tp)
        return required_mismatches(item, schema["items"], f"{path}[]")
    if not dataclasses.is_dataclass(tp):
        return []
    hints = typing.get_type_hints(tp)
    fields = dataclasses.fields(tp)
    expected = sorted(field_key(f) for f in fields if not allows_none(hints[f.name]))
    actual = sorted(schema.get("required", []))
    found = []
    if expected != actual:
        found.append(f"{path}: {getattr(tp, '__name__', tp)} needs required={expected}, the CRD has {actual}")
    for f in fields:
        found.extend(
            required_mismatches(hints[f.name], schema["properties"][field_key(f)], f"{path}.{field_key(f)}")
        )
    return found
