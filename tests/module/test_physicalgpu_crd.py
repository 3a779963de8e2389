# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU CRD (crds/physicalgpu.yaml) stays in sync with the models: its shape and required fields.

The models in ``deckhouse_gpu.domain.inventory.physicalgpu`` are what the components write; the CRD is what
the API server accepts. Any drift between them (a renamed field, a new enum value, an optional
field that became required) must fail here rather than as a pruned field or a rejected status
update on a real cluster. Descriptions, printer columns and value validation have files of their own.
"""

from __future__ import annotations

import re
from typing import Any

from deckhouse_gpu.domain.inventory import physicalgpu as pg
from deckhouse_gpu.k8s_semantics.apimachinery.codec import openapi_schema
from tests.support import crd_schema
from tests.support.crd_drift import differences, required_mismatches
from tests.support.crd_schema import VALIDATION_KEYS, Schema, node_at, structural, walk

# The shared fixtures, bound here so that pytest finds them for this module's tests.
crd, version, root, status = crd_schema.crd, crd_schema.version, crd_schema.root, crd_schema.status


# --- (a) structure -------------------------------------------------------------------------------


def test_status_schema_matches_the_models(status: Schema) -> None:
    found = differences(openapi_schema(pg.PhysicalGPUStatus), structural(status))
    assert not found, "CRD status schema drifted from the models:\n" + "\n".join(found)


def test_difference_report_names_the_path() -> None:
    expected = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
    }
    actual = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
    }
    assert differences(expected, actual) == [
        "status.properties.a.properties.b.type: models say 'integer', the CRD says 'string'"
    ]


def test_crd_identity(crd: dict[str, Any], version: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{pg.PLURAL}.{pg.GROUP}"
    assert crd["metadata"]["labels"] == {"module": "gpu", "heritage": "deckhouse"}
    spec = crd["spec"]
    assert spec["group"] == pg.GROUP
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == pg.KIND
    assert spec["names"]["plural"] == pg.PLURAL
    assert spec["names"]["shortNames"] == ["pgpu"]
    assert spec["names"]["categories"] == ["deckhouse", "gpu"]
    assert [v["name"] for v in spec["versions"]] == [pg.VERSION]
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_spec_is_an_empty_object(root: Schema) -> None:
    spec = root["properties"]["spec"]
    assert structural(spec) == {"type": "object"}


def test_schema_is_structural(root: Schema) -> None:
    """What a real API server demands: a type on every node, no defaults in status, sane keywords."""
    allowed_formats = {"date-time", "int64", "int32"}
    for path, node in walk(root, ""):
        assert node.get("type") in {"object", "array", "string", "integer", "boolean", "number"}, path
        assert "default" not in node, f"{path}: defaults are not applied under status"
        assert "nullable" not in node, path
        assert "additionalProperties" not in node, path
        for key in node:
            assert key in VALIDATION_KEYS | {"type", "properties", "items", "enum"} or key in {
                "x-kubernetes-list-type",
                "x-kubernetes-list-map-keys",
            }, f"{path}: unexpected keyword {key}"
        if "format" in node:
            assert node["format"] in allowed_formats, path
        if "pattern" in node:
            assert node["type"] == "string", path
            re.compile(node["pattern"])
        for name in node.get("required", []):
            assert name in node.get("properties", {}), f"{path}: required {name!r} is not a property"
        if node["type"] == "array":
            assert "items" in node, path
        for value in node.get("enum", []):
            assert isinstance(value, str), f"{path}: enum value {value!r} is not a string (quote it)"


def test_conditions_are_a_list_map_keyed_by_type(status: Schema) -> None:
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert "type" in item["required"], "list-map keys must be required"
    properties = item["properties"]
    assert properties["lastTransitionTime"]["format"] == "date-time"
    assert properties["reason"]["maxLength"] == 1024
    assert properties["reason"]["minLength"] == 1
    assert properties["message"]["maxLength"] == 32768
    assert properties["type"]["maxLength"] == 316
    assert properties["observedGeneration"]["minimum"] == 0


# --- (e) required fields -------------------------------------------------------------------------


def test_required_lists_match_non_optional_fields(status: Schema) -> None:
    found = required_mismatches(pg.PhysicalGPUStatus, status, "status")
    assert not found, "\n".join(found)


def test_required_covers_the_documented_minimum(status: Schema) -> None:
    assert set(node_at(status, "pciInfo")["required"]) == {"address", "class", "vendor", "device"}
    assert set(node_at(status, "pciInfo.subsystem")["required"]) == {"vendorID", "deviceID"}
    assert set(node_at(status, "capabilities.nvidia.mig")["required"]) == {"totalSlices", "profiles"}
    assert set(node_at(status, "currentState.nvidia.mig")["required"]) == {"mode"}
    assert set(node_at(status, "capabilities.nvidia.mig.profiles[]")["required"]) == {
        "profileID",
        "name",
        "memoryMiB",
        "sliceCount",
        "maxInstances",
    }
