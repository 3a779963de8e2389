# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A CRD's OpenAPI v3 schema checked by ``jsonschema``, to check encoded model values against it.

A CRD schema is JSON Schema draft 4 plus Kubernetes' extensions, which jsonschema ignores. Two
things the API server does are added: a field the schema does not declare is an error here, since
the API server would silently prune it (structural schemas), and ``date-time`` is checked (jsonschema
checks it only with an optional package)."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft4Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from tests.support.crd_schema import Schema

FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if isinstance(value, str):
        datetime.datetime.fromisoformat(value)
    return True


def _structural(schema: Schema) -> dict[str, Any]:
    """The schema with ``additionalProperties: false`` wherever the API server prunes unknown fields."""
    strict: dict[str, Any] = copy.deepcopy(schema)
    nodes: list[dict[str, Any]] = [strict]
    while nodes:
        node = nodes.pop()
        prunes = not node.get("x-kubernetes-preserve-unknown-fields")
        if node.get("type") == "object" and "additionalProperties" not in node and prunes:
            node["additionalProperties"] = False
        nodes.extend(node.get("properties", {}).values())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                nodes.append(node[key])
    return strict


def _where(path: str, steps: Iterable[str | int]) -> str:
    return path + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps)


def _messages(error: ValidationError, path: str) -> list[str]:
    where = _where(path, error.absolute_path)
    schema, given = error.schema, error.instance
    if error.validator == "additionalProperties" and isinstance(schema, dict) and isinstance(given, dict):
        extra = sorted(set(given) - set(schema.get("properties", {})))
        return [f"{where}.{key}: not in the CRD (the API server would prune it)" for key in extra]
    if error.validator == "pattern":  # the pattern as the CRD writes it, not repr'd
        return [f"{where}: {error.instance!r} does not match {error.validator_value}"]
    return [f"{where}: {error.message}"]


def validate(schema: Schema, value: Any, path: str = "status") -> list[str]:
    """Every violation of ``schema`` by ``value``, each "<path>: <what>" ("status.pciInfo.address: ...")."""
    validator = Draft4Validator(_structural(schema), format_checker=FORMATS)
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(step) for step in e.absolute_path])
    return [message for error in errors for message in _messages(error, path)]
