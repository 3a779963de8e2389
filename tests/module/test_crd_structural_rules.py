# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every CRD of the module passes what a real API server checks beyond the OpenAPI schema of a CRD
(structural schema, list and map types, printer columns); and the checker itself rejects what the
server rejects, with the server's messages (cases from apiextensions-apiserver's own tests)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.crd_rules import crd_errors, schema_errors, structural_errors

ROOT = Path(__file__).resolve().parents[2]
# Deckhouse applies every crds/*.yaml except the doc- and _ prefixes.
CRD_FILES = sorted(p for p in (ROOT / "crds").glob("*.yaml") if not p.name.startswith(("doc-", "_")))
P = "spec.versions[0].schema.openAPIV3Schema"


def test_the_module_ships_crds() -> None:
    assert [p.name for p in CRD_FILES] == ["gpuclass.yaml", "physicalgpu.yaml"]


@pytest.mark.parametrize("path", CRD_FILES, ids=lambda p: p.name)
def test_every_crd_would_be_accepted_by_the_api_server(path: Path) -> None:
    crd = yaml.safe_load(path.read_text())
    assert crd_errors(crd) == []


def physicalgpu() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load((ROOT / "crds" / "physicalgpu.yaml").read_text())
    return crd


def test_a_description_under_the_root_metadata_is_what_the_server_refused() -> None:
    crd = physicalgpu()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["description"] = "x"
    assert crd_errors(crd) == [
        f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and "
        "generateName, but metadata is implicitly specified"
    ]


def schema(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


# (schema, expected structural errors) as the server's ValidateStructural tests word them.
STRUCTURAL_CASES = {
    "metadata with non-properties": (
        "type: object\nproperties:\n metadata:\n   type: object\n   minimum: 42.0\n",
        [
            f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        ],
    ),
    "metadata restricting only name": (
        "type: object\nproperties:\n metadata:\n   type: object\n   properties:\n     name: {type: string, maxLength: 10}\n",
        [],
    ),
    "metadata with labels": (
        "type: object\nproperties:\n metadata:\n   type: object\n   properties:\n     labels: {type: object}\n",
        [
            f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ],
    ),
    "untyped field and item": (
        "type: object\nproperties:\n a: {}\n b:\n   type: array\n   items: {}\n c:\n   type: array\n",
        [
            f"{P}.properties[a].type: Required value: must not be empty for specified object fields",
            f"{P}.properties[b].items.type: Required value: must not be empty for specified array items",
            f"{P}.properties[c].items: Required value: must be specified",
        ],
    ),
    "int-or-string and preserve-unknown-fields need no type": (
        "type: object\nproperties:\n a: {x-kubernetes-int-or-string: true}\n b: {x-kubernetes-preserve-unknown-fields: true}\n",
        [],
    ),
    "generics under a junctor": (
        "type: object\nproperties:\n a:\n   type: string\n   anyOf:\n   - type: string\n     description: d\n",
        [
            f"{P}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
            f"{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
        ],
    ),
    "the int-or-string anyOf pattern is allowed": (
        "type: object\nproperties:\n a:\n   x-kubernetes-int-or-string: true\n   anyOf: [{type: integer}, {type: string}]\n",
        [],
    ),
    "a field only under a junctor": (
        "type: object\nproperties:\n c: {type: string}\nnot:\n properties:\n   d: {}\n",
        [f"{P}.properties[d]: Required value: because it is defined in {P}.not.properties[d]"],
    ),
    "additionalProperties at the root": (
        "type: object\nadditionalProperties: {type: string}\n",
        [f"{P}.additionalProperties: Forbidden: must not be used at the root"],
    ),
    "metadata in a nested junctor": (
        "type: object\nproperties:\n a:\n   type: object\n   properties: {metadata: {type: object}}\n   allOf: [{properties: {metadata: {}}}]\n",
        [
            f"{P}.properties[a].allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"
        ],
    ),
    "kind must be a string at the root": (
        "type: object\nproperties:\n kind: {type: integer}\n",
        [f'{P}.properties[kind].type: Invalid value: "integer": must be string'],
    ),
    "a pattern RE2 cannot compile": (
        "type: object\nproperties:\n a: {type: string, pattern: '(?<=x)y'}\n",
        "pattern",
    ),
}


@pytest.mark.parametrize("name", STRUCTURAL_CASES)
def test_structural_rules_as_the_server_words_them(name: str) -> None:
    text, expected = STRUCTURAL_CASES[name]
    found = structural_errors(schema(text), P)
    if isinstance(expected, str):
        assert len(found) == 1
        assert f".{expected}: Invalid value" in found[0]
    else:
        assert found == sorted(expected)


SCHEMA_CASES = {
    "uniqueItems": (
        "type: object\nproperties:\n a: {type: array, items: {type: string}, uniqueItems: true}\n",
        f"{P}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
    ),
    "properties beside additionalProperties": (
        "type: object\nproperties:\n a:\n   type: object\n   properties: {b: {type: string}}\n   additionalProperties: {type: string}\n",
        f"{P}.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
    ),
    "a default in the top-level metadata": (
        "type: object\nproperties:\n metadata:\n   type: object\n   properties: {name: {type: string, default: x}}\n",
        f"{P}.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata",
    ),
    "a map list without keys": (
        "type: object\nproperties:\n a: {type: array, x-kubernetes-list-type: map, items: {type: object}}\n",
        f"{P}.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
    ),
    "a map-list key that is neither required nor defaulted": (
        "type: object\nproperties:\n a:\n   type: array\n   x-kubernetes-list-type: map\n   x-kubernetes-list-map-keys: [type]\n   items: {type: object, properties: {type: {type: string}}}\n",
        f"{P}.properties[a].items.properties[type].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
    ),
    "a set of granular objects": (
        "type: object\nproperties:\n a: {type: array, x-kubernetes-list-type: set, items: {type: object}}\n",
        f"{P}.properties[a].items.x-kubernetes-map-type: Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set",
    ),
    "a list type on an object": (
        "type: object\nproperties:\n a: {type: object, x-kubernetes-list-type: atomic}\n",
        f'{P}.properties[a].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified',
    ),
    "a $ref": (
        "type: object\nproperties:\n a: {type: object, $ref: '#/x'}\n",
        f"{P}.properties[a].$ref: Forbidden: $ref is not supported",
    ),
}


@pytest.mark.parametrize("name", SCHEMA_CASES)
def test_schema_rules_as_the_server_words_them(name: str) -> None:
    text, expected = SCHEMA_CASES[name]
    assert schema_errors(schema(text), P) == [expected]


def test_the_conditions_list_stays_a_map_keyed_by_a_required_type() -> None:
    # DESIGN.md D8: each component owns its condition types; server-side apply merges them by type.
    crd = physicalgpu()
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    conditions = root["properties"]["status"]["properties"]["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == (
        "map",
        ["type"],
    )
    broken = copy.deepcopy(crd)
    broken_conditions = broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"][
        "properties"
    ]["conditions"]
    broken_conditions["items"]["required"].remove("type")
    assert crd_errors(broken) == [
        f"{P}.properties[status].properties[conditions].items.properties[type].default: Required value: "
        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
    ]


def test_printer_columns_and_names_are_checked() -> None:
    crd = physicalgpu()
    version = crd["spec"]["versions"][0]
    version["additionalPrinterColumns"].append({"name": "Bad", "type": "float", "jsonPath": "status.x"})
    crd["spec"]["names"]["shortNames"] = ["PGPU"]
    errors = crd_errors(crd)
    assert "spec.versions[0].additionalPrinterColumns[" in errors[-1]
    assert any(e.startswith("spec.names.shortNames[0]") for e in errors)
    assert any('.type: Unsupported value: "float"' in e for e in errors)
    assert any(".jsonPath: Invalid value: 'status.x'" in e for e in errors)
