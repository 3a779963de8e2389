# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU printer columns: the operator view, the model's copy, and paths that resolve."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.inventory import physicalgpu as pg
from tests.support import crd_schema
from tests.support.crd_jsonpath import TOKEN, resolve
from tests.support.crd_schema import Schema

# The shared fixtures, bound here so that pytest finds them for this module's tests.
crd, version, root = crd_schema.crd, crd_schema.version, crd_schema.root


def test_printer_columns_are_the_operator_view(version: dict[str, Any]) -> None:
    columns = [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Node", 0),
        ("Model", 0),
        ("Memory(MiB)", 0),
        ("MIG", 0),
        ("DriverReady", 0),
        ("HardwareHealthy", 0),
        ("Age", 0),
        ("Address", 1),
        ("Driver", 1),
        ("Product", 1),
        ("UUID", 1),
    ]


def test_printer_columns_match_the_model(version: dict[str, Any]) -> None:
    """``PRINTER_COLUMNS`` renders the simulator's ``kubectl get`` view; it must be the CRD's."""
    in_crd = [
        pg.PrinterColumn(c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
        for c in version["additionalPrinterColumns"]
    ]
    assert in_crd == list(pg.PRINTER_COLUMNS)


def test_printer_columns_resolve_to_schema_properties(root: Schema, version: dict[str, Any]) -> None:
    column_types = {"string": "string", "integer": "integer", "boolean": "boolean", "number": "number"}
    for column in version["additionalPrinterColumns"]:
        node = resolve(root, column["jsonPath"])
        if node is None:
            assert column["type"] == "date", column["name"]
            continue
        assert column_types.get(column["type"]) == node["type"], f"{column['name']}: type mismatch"


@pytest.mark.parametrize(
    "json_path",
    [
        ".status.pciInfo.nope",
        '.status.conditions[?(@.nope=="DriverReady")].status',
        '.status.nodeInfo[?(@.type=="X")].nodeName',
        ".status.pciInfo..address",
    ],
)
def test_resolve_rejects_paths_that_do_not_exist(root: Schema, json_path: str) -> None:
    with pytest.raises(AssertionError):
        resolve(root, json_path)


def test_condition_columns_filter_on_known_condition_types(version: dict[str, Any]) -> None:
    filtered = {
        match.group("value")
        for column in version["additionalPrinterColumns"]
        for match in TOKEN.finditer(column["jsonPath"])
        if match.group("field")
    }
    assert filtered == {"DriverReady", "HardwareHealthy"}
