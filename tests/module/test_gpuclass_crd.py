# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPUClass CRD: its identity and columns, a description on every field and the Russian twin
with the same ones, the documented examples valid for its schema and for the controller, and the
status the controller writes valid for the status schema. (crd_errors, in
test_crd_structural_rules, checks it as the API server would; tests/real sends it to one.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.domain.gpuclass import API_VERSION, KIND, PLURAL, status
from deckhouse_gpu.domain.gpuclass.render import summary
from deckhouse_gpu.domain.gpuclass.spec import parse_spec
from tests.support.crd_schema import CYRILLIC, description_paths, walk
from tests.support.openapi_validator import validate

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE, RU_FILE = ROOT / "crds" / "gpuclass.yaml", ROOT / "crds" / "doc-ru-gpuclass.yaml"
CRD: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
RU: dict[str, Any] = yaml.safe_load(RU_FILE.read_text())
VERSION = CRD["spec"]["versions"][0]
ROOT_SCHEMA = VERSION["schema"]["openAPIV3Schema"]
DOCS = [ROOT / "docs" / "GPUCLASS.md", ROOT / "docs" / "GPUCLASS.ru.md"]


def test_identity() -> None:
    assert CRD["metadata"]["name"] == f"{PLURAL}.gpu.deckhouse.io"
    assert (CRD["spec"]["group"], VERSION["name"]) == tuple(API_VERSION.split("/"))
    assert CRD["spec"]["scope"] == "Cluster"
    assert CRD["spec"]["names"]["kind"] == KIND
    assert CRD["spec"]["names"]["shortNames"] == ["gpuc"]
    assert VERSION["subresources"] == {"status": {}}


def test_the_columns_an_operator_reads_first() -> None:
    columns = {c["name"]: c for c in VERSION["additionalPrinterColumns"]}
    first = [c["name"] for c in VERSION["additionalPrinterColumns"] if not c.get("priority")]
    assert first == ["Ready", "Selects", "Devices", "Extended Resource", "Age"]
    assert columns["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["Reason"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].reason'


def test_every_field_is_described_in_both_languages() -> None:
    missing = [
        p or "<root>" for p, n in walk(ROOT_SCHEMA, "") if p != "metadata" and not n.get("description")
    ]
    assert not missing
    assert ROOT_SCHEMA["properties"]["metadata"] == {"type": "object"}
    lines = [n for n, line in enumerate(CRD_FILE.read_text().splitlines(), 1) if CYRILLIC.search(line)]
    assert not lines
    (ru_version,) = RU["spec"]["versions"]
    russian = ru_version["schema"]["openAPIV3Schema"]
    assert description_paths(russian) == description_paths(ROOT_SCHEMA)
    for path, node in walk(russian, ""):
        assert set(node) <= {"description", "properties", "items"}, path
        if "description" in node:
            assert CYRILLIC.search(node["description"]), f"{path}: not translated"


def documented_classes(path: Path) -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", path.read_text(), re.DOTALL)
    found = [yaml.safe_load(b) for b in blocks]
    return [d for d in found if isinstance(d, dict) and d.get("kind") == KIND]


def test_both_languages_show_the_same_classes() -> None:
    english, russian = (documented_classes(p) for p in DOCS)
    assert len(english) == 5
    assert english == russian


def schema_errors(spec: dict[str, Any]) -> list[str]:
    # The small validator knows no additionalProperties: matchLabels' keys are the API server's.
    found = validate(ROOT_SCHEMA["properties"]["spec"], spec, "spec")
    return [e for e in found if ".matchLabels." not in e]


@pytest.mark.parametrize("doc", documented_classes(DOCS[0]), ids=lambda d: d["metadata"]["name"])
def test_each_documented_class_is_valid(doc: dict[str, Any]) -> None:
    assert schema_errors(doc["spec"]) == []
    parse_spec(doc["spec"])


def test_the_status_the_controller_writes_fits_the_schema() -> None:
    spec = parse_spec({"deviceKind": "MIG", "migProfile": "1g.10gb", "cards": {"models": ["a100-pcie-80gb"]}})
    for verdict, matching in [
        (status.ready("c", status.Matching(14, 2)), status.Matching(14, 2)),
        (status.ready("c", status.Matching()), status.Matching()),
        (status.name_taken("c"), None),
    ]:
        written = status.status_patch(None, verdict, 1, "2026-01-01T00:00:00Z", summary(spec), matching)
        kept = {k: v for k, v in written.items() if v is not None}  # a merge patch's null removes
        assert validate(ROOT_SCHEMA["properties"]["status"], kept) == []
