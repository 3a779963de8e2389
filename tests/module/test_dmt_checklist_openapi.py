# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The openapi rules of dmt, checked statically over openapi/ and crds/: enum values, the
highAvailability setting, the doc-ru- translations and the CRDs' version, label and deprecation
marks. Each test names the dmt source it follows (repository deckhouse/dmt).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.module.dmt_checklist import (
    MODULE_NAME,
    ROOT,
    documents,
    enum_excluded,
    enum_problem,
    key_paths,
    openapi_files,
    setting,
)

SCHEMAS = openapi_files()
CRDS = [p for p in SCHEMAS if p.parent.name == "crds"]


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def enum_problems(path: Path, excludes: list[str]) -> list[str]:
    found = []
    for document in documents(path):
        for key, value in key_paths(document):
            if not key.endswith(".enum") or not isinstance(value, list):
                continue
            if enum_excluded(key, excludes):
                continue
            found += [f"{key}: {p}" for v in value if isinstance(v, str) and (p := enum_problem(v))]
    return found


@pytest.mark.parametrize("path", SCHEMAS, ids=ids(SCHEMAS))
def test_enum_values_are_camel_case(path: Path) -> None:
    # pkg/linters/openapi/rules/enum.go; exclusions: openapi.exclude-rules.enum of .dmtlint.yaml
    excludes = setting("openapi", "exclude-rules", "enum") or []
    problems = enum_problems(path, excludes)
    assert not problems, problems


@pytest.mark.parametrize("path", SCHEMAS, ids=ids(SCHEMAS))
def test_high_availability_has_no_default(path: Path) -> None:
    # pkg/linters/openapi/rules/ha.go: the top-level highAvailability setting must stay unset
    # unless the user sets it, so that the cluster's global mode decides.
    for document in documents(path):
        for key, value in key_paths(document):
            if key == "properties.highAvailability":
                assert isinstance(value, dict), key
                assert "default" not in value, key


def test_no_kubernetes_validations_in_module_schemas() -> None:
    # pkg/linters/openapi/rules/validations.go: openapi/ uses x-deckhouse-validations
    for path in SCHEMAS:
        if path.parent.name == "openapi":
            keys = [k for d in documents(path) for k, _ in key_paths(d)]
            assert not [k for k in keys if k.endswith("x-kubernetes-validations")], path.name


def base_files() -> list[Path]:
    """The files that need a doc-ru- twin: every schema but openapi/values.yaml."""
    return [p for p in SCHEMAS if not (p.parent.name == "openapi" and p.name == "values.yaml")]


def test_every_schema_and_crd_has_a_russian_twin() -> None:
    # pkg/linters/openapi/rules/bilingual.go
    missing = [ids([p])[0] for p in base_files() if not (p.parent / f"doc-ru-{p.name}").exists()]
    assert not missing, f"no doc-ru- twin: {missing}"
    for folder in ("openapi", "crds"):
        for twin in (ROOT / folder).glob("doc-ru-*"):
            assert (twin.parent / twin.name.removeprefix("doc-ru-")).exists(), f"{twin.name} has no base file"


class StrictLoader(yaml.SafeLoader):
    """Refuses duplicate keys, as dmt's strict decoding of doc-ru- files does."""


def strict_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    duplicates = sorted({str(k) for k in keys if keys.count(k) > 1})
    if duplicates:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {duplicates}", node.start_mark)
    return dict(loader.construct_pairs(node, deep=deep))


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, strict_mapping)
TWINS = sorted(p for folder in ("openapi", "crds") for p in (ROOT / folder).glob("doc-ru-*.y*ml"))


@pytest.mark.parametrize("twin", TWINS, ids=ids(TWINS))
def test_russian_twins_are_valid_yaml_mappings(twin: Path) -> None:
    # pkg/linters/openapi/rules/doc_ru_yaml.go
    for document in yaml.load_all(twin.read_text(), Loader=StrictLoader):  # a SafeLoader
        assert isinstance(document, dict), f"{twin.name}: a doc-ru- file is a mapping"


def deprecated_keys(node: Any, path: str) -> list[str]:
    found = []
    if isinstance(node, dict):
        if "deprecated" in node:
            found.append(path)
        for key, value in node.items():
            found += deprecated_keys(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += deprecated_keys(value, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("path", CRDS, ids=ids(CRDS))
def test_crds_are_v1_labelled_and_use_x_doc_deprecated(path: Path) -> None:
    # pkg/linters/openapi/rules/crds.go: the module's own CRDs (*.deckhouse.io)
    for crd in documents(path):
        if "deckhouse.io" not in crd["metadata"]["name"]:
            continue
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1", crd["metadata"]["name"]
        assert (crd["metadata"].get("labels") or {}).get("module") == MODULE_NAME, crd["metadata"]["name"]
        for version in crd["spec"]["versions"]:
            properties = version["schema"]["openAPIV3Schema"].get("properties") or {}
            where = f"{crd['metadata']['name']} {version['name']}"
            assert not deprecated_keys(properties, "properties"), f"{where}: use x-doc-deprecated"
