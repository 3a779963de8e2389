# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every PhysicalGPU CRD node is described, in English, and its Russian twin translates exactly those."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.inventory import physicalgpu as pg
from tests.support import crd_schema
from tests.support.crd_schema import CRD_FILE, CYRILLIC, Schema, description_paths, walk

# The shared fixtures, bound here so that pytest finds them for this module's tests.
crd, ru, version, root = crd_schema.crd, crd_schema.ru, crd_schema.version, crd_schema.root


# --- (b) descriptions ----------------------------------------------------------------------------


def test_every_node_has_a_description_except_the_root_metadata(root: Schema) -> None:
    missing = [
        path or "<root>"
        for path, node in walk(root, "")
        if path != "metadata" and not str(node.get("description", "")).strip()
    ]
    assert not missing, f"schema nodes without a description: {missing}"
    # The API server rejects the CRD if the root's metadata carries anything but its type.
    assert root["properties"]["metadata"] == {"type": "object"}


def test_english_crd_has_no_cyrillic() -> None:
    lines = [n for n, line in enumerate(CRD_FILE.read_text("utf-8").splitlines(), 1) if CYRILLIC.search(line)]
    assert not lines, f"Cyrillic in {CRD_FILE.name} on lines {lines}"


# --- (c) the Russian twin ------------------------------------------------------------------------


def test_ru_twin_has_the_same_descriptions(root: Schema, ru: dict[str, Any]) -> None:
    (ru_version,) = ru["spec"]["versions"]
    assert ru_version["name"] == pg.VERSION
    ru_root = ru_version["schema"]["openAPIV3Schema"]
    english, russian = description_paths(root), description_paths(ru_root)
    assert not english - russian, f"not translated: {sorted(english - russian)}"
    assert not russian - english, f"translated but absent from the CRD: {sorted(russian - english)}"


def test_ru_twin_holds_only_descriptions(crd: dict[str, Any], ru: dict[str, Any]) -> None:
    assert set(ru) == {"spec"}
    assert set(ru["spec"]) == {"versions"}
    assert [v["name"] for v in ru["spec"]["versions"]] == [v["name"] for v in crd["spec"]["versions"]]
    for entry in ru["spec"]["versions"]:
        assert set(entry) == {"name", "schema"}
        assert set(entry["schema"]) == {"openAPIV3Schema"}
        for path, node in walk(entry["schema"]["openAPIV3Schema"], ""):
            extra = set(node) - {"description", "properties", "items"}
            assert not extra, f"{path or '<root>'}: the twin may hold only descriptions, found {extra}"
            if "description" in node:
                text = node["description"]
                assert isinstance(text, str), path
                assert CYRILLIC.search(text), f"{path or '<root>'}: description is not in Russian"
