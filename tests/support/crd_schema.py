# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU CRD and its Russian twin as the tests read them: the files, fixtures and tree walks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.domain.inventory import physicalgpu as pg

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "physicalgpu.yaml"
RU_FILE = ROOT / "crds" / "doc-ru-physicalgpu.yaml"

# Keys that only constrain or document values; the structural shape is what remains.
VALIDATION_KEYS = frozenset(
    {
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "required",
    }
)
CYRILLIC = re.compile("[\u0400-\u04ff]")

Schema = dict[str, Any]


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as stream:
        data = yaml.safe_load(stream)
    assert isinstance(data, dict), f"{path} is not a YAML mapping"
    return data


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return load(CRD_FILE)


@pytest.fixture(scope="module")
def ru() -> dict[str, Any]:
    return load(RU_FILE)


@pytest.fixture(scope="module")
def version(crd: dict[str, Any]) -> dict[str, Any]:
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == pg.VERSION]
    assert isinstance(entry, dict)
    return entry


@pytest.fixture(scope="module")
def root(version: dict[str, Any]) -> Schema:
    schema = version["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


@pytest.fixture(scope="module")
def status(root: Schema) -> Schema:
    schema = root["properties"]["status"]
    assert isinstance(schema, dict)
    return schema


def walk(schema: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    """Every schema node with a readable path: ``status.pciInfo.address``, ``status.conditions[]``."""
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}" if path else name)
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")


def node_at(schema: Schema, path: str) -> Schema:
    """The node of ``walk``'s path ``path`` (relative to ``schema``)."""
    for candidate, node in walk(schema, ""):
        if candidate == path:
            return node
    raise KeyError(path)


def structural(schema: Any) -> Any:
    """``schema`` without descriptions and validation-only keys: what ``openapi_schema`` produces."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in VALIDATION_KEYS or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: structural(child) for name, child in value.items()}
        elif key == "items":
            out[key] = structural(value)
        else:
            out[key] = value
    return out


def description_paths(schema: Schema) -> set[str]:
    return {path for path, node in walk(schema, "") if "description" in node}
