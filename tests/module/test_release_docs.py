# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""docs/RELEASE.md and docs/RELEASE.ru.md: the Deckhouse objects of their YAML blocks are valid as
Deckhouse's CRDs describe them (deckhouse/deckhouse deckhouse-controller/crds/module-source.yaml,
module-update-policy.yaml, module-config.yaml, module-pull-override.yaml: the served storage
versions, required fields, enums and patterns), they refer to each other, both languages show the
same objects in the same structure, and the channels they list are the ones the deploy workflow
knows.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.module.test_workflow_policy import CHANNELS
from tests.support.module_values import problems

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"en": ROOT / "docs" / "RELEASE.md", "ru": ROOT / "docs" / "RELEASE.ru.md"}
CONFIG_SCHEMA = yaml.safe_load((ROOT / "openapi" / "config-values.yaml").read_text())
MODULE = yaml.safe_load((ROOT / "module.yaml").read_text())["name"]

RELEASE_CHANNELS = [
    "Alpha",
    "Beta",
    "EarlyAccess",
    "Stable",
    "RockSolid",
]  # ModuleUpdatePolicy enum, less Lts
UPDATE_MODES = {"Auto", "Manual", "AutoPatch"}  # v1alpha2; v1alpha1 also had Ignore
DAYS = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
WINDOW_TIME = re.compile(r"^(?:\d|[01]\d|2[0-3]):[0-5]\d$")
# The API version each kind is shown with: the served, storage version of its CRD.
API_VERSIONS = {
    "ModuleSource": "deckhouse.io/v1alpha1",
    "ModuleUpdatePolicy": "deckhouse.io/v1alpha2",
    "ModuleConfig": "deckhouse.io/v1alpha1",
    "ModulePullOverride": "deckhouse.io/v1alpha2",
}


def objects(doc: Path) -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.S)
    found = [yaml.safe_load(block) for block in blocks]
    assert all(isinstance(obj, dict) and "kind" in obj for obj in found), doc.name
    return found


def by_kind(doc: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for obj in objects(doc):
        found.setdefault(obj["kind"], obj)  # the first of each kind: the subscription of a cluster
    return found


def check_module_source(obj: dict[str, Any]) -> None:
    registry = obj["spec"]["registry"]
    assert set(obj["spec"]) <= {"registry"}, "releaseChannel of a ModuleSource is deprecated"
    assert set(registry) <= {"repo", "dockerCfg", "ca", "scheme"}, registry
    assert registry["repo"], "repo is required"
    assert "://" not in registry["repo"], "repo is <host>/<path>, without a scheme"
    assert registry.get("scheme", "HTTPS") in {"HTTP", "HTTPS"}
    if "dockerCfg" in registry:
        config = json.loads(base64.b64decode(registry["dockerCfg"], validate=True))
        host = registry["repo"].split("/")[0]
        assert set(config["auths"]) == {host}, "the credentials are for the registry of repo"
        user, _, token = base64.b64decode(config["auths"][host]["auth"]).decode().partition(":")
        assert user, "a user name"
        assert token, "a token"


def check_update_policy(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert "update" in spec, "spec.update is required"
    assert "moduleReleaseSelector" not in spec, "v1alpha2 has no moduleReleaseSelector"
    assert spec.get("releaseChannel", "Stable") in RELEASE_CHANNELS
    assert spec["update"].get("mode", "Auto") in UPDATE_MODES
    for window in spec["update"].get("windows", []):
        assert WINDOW_TIME.match(window["from"]), window
        assert WINDOW_TIME.match(window["to"]), window
        assert window["from"].zfill(5) < window["to"].zfill(5), window
        assert set(window.get("days", [])) <= DAYS, window


def check_module_config(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert obj["metadata"]["name"] == MODULE, "a ModuleConfig is named after its module"
    assert spec["enabled"] is True
    assert isinstance(spec["version"], int)
    assert set(spec) <= {"enabled", "version", "settings", "source", "updatePolicy", "maintenance"}, spec
    assert problems(CONFIG_SCHEMA, spec.get("settings", {})) == []


def check_pull_override(obj: dict[str, Any]) -> None:
    assert obj["metadata"]["name"] == MODULE, "a ModulePullOverride is named after its module"
    assert obj["spec"]["imageTag"]
    assert "source" not in obj["spec"], "source belongs to the unserved v1alpha1"


CHECKS = {
    "ModuleSource": check_module_source,
    "ModuleUpdatePolicy": check_update_policy,
    "ModuleConfig": check_module_config,
    "ModulePullOverride": check_pull_override,
}


@pytest.mark.parametrize("language", DOCS)
def test_every_object_is_valid(language: str) -> None:
    found = objects(DOCS[language])
    assert {obj["kind"] for obj in found} == set(CHECKS)
    for obj in found:
        assert obj["apiVersion"] == API_VERSIONS[obj["kind"]], obj
        assert obj["metadata"]["name"], obj
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}, obj
        CHECKS[obj["kind"]](obj)


@pytest.mark.parametrize("language", DOCS)
def test_the_module_config_names_the_source_and_the_policy_shown(language: str) -> None:
    shown = by_kind(DOCS[language])
    spec = shown["ModuleConfig"]["spec"]
    assert spec["source"] == shown["ModuleSource"]["metadata"]["name"]
    assert spec["updatePolicy"] == shown["ModuleUpdatePolicy"]["metadata"]["name"]


def test_both_languages_show_the_same_objects() -> None:
    assert objects(DOCS["en"]) == objects(DOCS["ru"])


def test_both_languages_have_the_same_structure() -> None:
    def shape(doc: Path) -> list[str]:
        text = doc.read_text()
        headings = re.findall(r"^(#{2,3}) ", text, re.M)
        fences = re.findall(r"^\s*```(\w*)$", text, re.M)
        tables = len(re.findall(r"^\| --- ", text, re.M))
        return [*headings, *fences, str(tables)]

    assert shape(DOCS["en"]) == shape(DOCS["ru"])


@pytest.mark.parametrize("language", DOCS)
def test_the_channels_table_maps_registry_tags_to_policy_channels(language: str) -> None:
    rows = re.findall(r"^\| `([a-z-]+)` \| `([A-Za-z]+)` \| (.+) \|$", DOCS[language].read_text(), re.M)
    assert [tag for tag, _, _ in rows] == CHANNELS
    assert [channel for _, channel, _ in rows] == RELEASE_CHANNELS
    previous = [re.findall(r"`([a-z-]+)`", rest) for _, _, rest in rows]
    assert previous == [[], *[[tag] for tag in CHANNELS[:-1]]]


@pytest.mark.parametrize("language", DOCS)
def test_the_docs_show_what_a_cluster_shows_and_how_to_release(language: str) -> None:
    text = DOCS[language].read_text()
    for command in (
        "kubectl get modulesources",
        "kubectl get modulereleases",
        "make release-notes VERSION=",
        "gh workflow run deploy.yml -f tag=v0.1.0 -f release_channel=alpha",
        "-f rollback=true",
        'modules.deckhouse.io/approved="true"',
    ):
        assert command in text, f"{DOCS[language].name}: {command}"
    # The columns of `kubectl get` are the printer columns of the CRDs.
    assert "NAME          COUNT   STATUS   SYNC   MSG" in text
    assert "NAME          PHASE        UPDATE POLICY   TRANSITIONTIME   MESSAGE" in text


@pytest.mark.parametrize("language", DOCS)
def test_the_settings_the_docs_name_are_the_workflows(language: str) -> None:
    text = DOCS[language].read_text()
    workflows = "\n".join(p.read_text() for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    used = set(re.findall(r"\$\{\{ (?:vars|secrets)\.([A-Z0-9_]+) \}\}", workflows))
    named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", text)) - {"MODULES_MODULE_TAG"}
    assert used == named, f"only in the workflows: {used - named}; only in the docs: {named - used}"
