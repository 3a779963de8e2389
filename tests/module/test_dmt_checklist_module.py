# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The module-level rules of dmt, checked statically: module.yaml, oss.yaml, .helmignore, the
deprecated release.yaml and enabled script, conversions, the documentation twins and the Cyrillic
rules. Each test names the dmt source it follows (repository deckhouse/dmt).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from tests.module.dmt_checklist import MODULE_NAME, NAMESPACE, ROOT, allows, load_yaml, project_files

MODULE = load_yaml(ROOT / "module.yaml")
STAGES = ("Experimental", "Preview", "General Availability", "Deprecated")
EDITIONS = ("ce", "fe", "ee", "se", "se-plus", "be", "_default")
BUNDLES = ("Minimal", "Managed", "Default")
CYRILLIC = re.compile("[\u0400-\u04ff]")


def test_module_yaml_names_the_module_and_its_stage() -> None:
    # pkg/linters/module/rules/module_yaml.go
    name = MODULE["name"]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
    assert len(name) <= 64
    assert name == MODULE_NAME == load_yaml(ROOT / "Chart.yaml")["name"]
    assert MODULE["stage"] in STAGES
    assert MODULE["descriptions"]["en"].strip()
    assert MODULE["descriptions"]["ru"].strip()
    assert "description" not in MODULE, "`description` is deprecated: use descriptions.en/ru"
    # dmt takes the namespace from module.yaml (or a .namespace file) and fails without one.
    assert MODULE["namespace"] == NAMESPACE == f"d8-{name}"
    assert not (ROOT / ".namespace").exists() or (ROOT / ".namespace").read_text().strip() == NAMESPACE


def test_module_yaml_requirements_are_valid_constraints() -> None:
    requirements = MODULE.get("requirements") or {}
    for key in ("deckhouse", "kubernetes"):
        if key in requirements:
            allows(requirements[key], "1.99.0")  # raises on a form that is not a constraint
    for constraint in (requirements.get("modules") or {}).values():
        allows(constraint.replace("!optional", "").strip(), "1.0.0")


def test_weight_follows_the_deckhouse_requirement() -> None:
    # A non-critical module lists `weight` (900-999) only while it still supports a Deckhouse
    # older than 1.72, and must drop it once requirements.deckhouse allows 1.72 and later only.
    requirement = (MODULE.get("requirements") or {}).get("deckhouse")
    if MODULE.get("critical"):
        assert MODULE.get("weight"), "a critical module needs a weight"
        return
    # 1.72 is dmt's MinDeckhouseVersionWeight (pkg/linters/module/rules/module_yaml.go).
    supports_older = requirement is None or allows(requirement, "1.71.99")
    if supports_older:
        assert 900 <= MODULE.get("weight", 0) <= 999, "weight 900-999 is required before 1.72"
    else:
        assert "weight" not in MODULE, f"requirements.deckhouse {requirement!r}: remove `weight`"


def test_optional_module_yaml_sections_are_well_formed() -> None:
    editions = (MODULE.get("accessibility") or {}).get("editions")
    if "accessibility" in MODULE:
        assert editions, "accessibility needs editions"
    for edition, spec in (editions or {}).items():
        assert edition in EDITIONS
        assert set(spec.get("enabledInBundles") or []) <= set(BUNDLES), edition
    versions = (MODULE.get("update") or {}).get("versions") or []
    for entry in versions:
        for end in ("from", "to"):
            assert re.fullmatch(r"\d+\.\d+", str(entry[end])), entry
    disable = MODULE.get("disable")
    if disable is not None:
        assert isinstance(disable.get("confirmation", False), bool)
        # `messages` needs Deckhouse 1.77; older releases read only `message`.
        if "messages" in disable:
            assert disable["messages"]["en"].strip()
            assert disable["messages"]["ru"].strip()
            assert disable.get("message", "").strip(), "keep `message` for Deckhouse < 1.77"


OSS_FIELDS = {"id", "name", "description", "link", "logo", "license", "version", "versions"}
SEMVER = re.compile(r"v?\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")


def absolute_url(text: str) -> bool:
    parsed = urlparse(text)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc) and " " not in text


def test_oss_yaml_describes_every_project() -> None:
    # pkg/linters/module/rules/oss_library.go (strict decoding: no unknown fields)
    projects = load_yaml(ROOT / "oss.yaml")
    assert isinstance(projects, list)
    assert projects, "oss.yaml must list the upstream projects"
    ids = [str(p.get("id", "")).strip() for p in projects]
    assert all(ids), "every project needs an id"
    assert len(set(ids)) == len(ids), f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    for project in projects:
        where = project["id"]
        assert set(project) <= OSS_FIELDS, (where, sorted(set(project) - OSS_FIELDS))
        for field in ("name", "description", "license", "link"):
            assert str(project.get(field, "")).strip(), (where, field)
        assert absolute_url(project["link"]), (where, project["link"])
        if "logo" in project:
            assert absolute_url(project["logo"]), (where, project["logo"])
        has_version, has_versions = bool(str(project.get("version", "")).strip()), "versions" in project
        assert has_version != has_versions, (where, "exactly one of version and versions")
        for entry in project.get("versions") or [{"version": project["version"]}]:
            assert SEMVER.fullmatch(str(entry["version"]).strip()), (where, entry["version"])


def helmignore_patterns() -> list[str]:
    lines = (ROOT / ".helmignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_helmignore_keeps_the_chart_and_drops_the_rest() -> None:
    # pkg/linters/module/rules/helmignore.go
    patterns = helmignore_patterns()
    assert patterns, ".helmignore must not be empty"
    for pattern in patterns:
        assert " " not in pattern, pattern
        assert pattern not in ("*", "**"), pattern
        if not pattern.startswith("!"):
            assert "templates/" not in pattern, pattern
            assert "Chart.yaml" not in pattern, pattern
    # What the Helm release never needs, so it stays under 1 MiB.
    needed = ("crds", "docs", "enabled", "hooks", "images", "lib", "openapi", "Makefile", "*.md")
    for pattern in (*needed, "werf*.yaml", "release.yaml"):
        assert pattern in patterns, pattern


def test_no_legacy_release_file_and_no_enabled_script() -> None:
    # pkg/linters/module/rules/legacy_release_file.go, enabled_script.go
    assert not (ROOT / "release.yaml").exists()
    enabled = ROOT / "enabled"
    assert not enabled.exists() or not enabled.read_text().strip(), "the enabled script is deprecated"


def conversion_problems(openapi: Path) -> list[str]:
    """What dmt's conversions rule would say of an openapi folder: config-values.yaml's
    ``x-config-version`` N (1 when absent) needs exactly openapi/conversions/v2.yaml .. vN.yaml,
    each with an English and a Russian description; version 1 needs none."""
    values = load_yaml(openapi / "config-values.yaml") if (openapi / "config-values.yaml").exists() else {}
    version = int((values or {}).get("x-config-version", 1))
    folder = openapi / "conversions"
    found = sorted(int(p.stem[1:]) for p in folder.glob("v*.yaml")) if folder.exists() else []
    problems = []
    if found != list(range(2, version + 1)):
        problems.append(f"x-config-version {version} needs conversions v2..v{version}, found {found}")
    for number in found:
        description = (load_yaml(folder / f"v{number}.yaml") or {}).get("description") or {}
        problems += [
            f"v{number}.yaml: no {lang} description" for lang in ("en", "ru") if not description.get(lang)
        ]
    return problems


def test_conversions_match_the_config_version() -> None:
    # pkg/linters/module/rules/conversions.go: openapi/conversions/v2.yaml .. vN.yaml
    assert conversion_problems(ROOT / "openapi") == []


def test_the_conversions_check_finds_gaps_and_missing_descriptions(tmp_path: Path) -> None:
    """The check above passes for this module because it has no conversions: it must still be
    able to fail."""
    (tmp_path / "config-values.yaml").write_text("x-config-version: 3\ntype: object\n")
    assert conversion_problems(tmp_path) == ["x-config-version 3 needs conversions v2..v3, found []"]
    (tmp_path / "conversions").mkdir()
    (tmp_path / "conversions/v2.yaml").write_text("description:\n  en: Renames a field.\n")
    (tmp_path / "conversions/v3.yaml").write_text("description:\n  en: Drops a field.\n  ru: Убирает поле.\n")
    assert conversion_problems(tmp_path) == ["v2.yaml: no ru description"]
    (tmp_path / "conversions/v3.yaml").rename(tmp_path / "conversions/v4.yaml")
    assert "found [2, 4]" in conversion_problems(tmp_path)[0]
    (tmp_path / "config-values.yaml").write_text("type: object\n")
    assert conversion_problems(tmp_path)[0].startswith("x-config-version 1 needs conversions v2..v1")


def top_level_docs() -> list[str]:
    return sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_docs_readme_exists_and_every_doc_has_a_russian_twin() -> None:
    # pkg/linters/docs/rules/readme.go, bilingual.go: top-level docs/*.md
    assert (ROOT / "docs" / "README.md").read_text().strip()
    names = top_level_docs()
    russian = {n for n in names if n.endswith((".ru.md", "_RU.md"))}
    for name in set(names) - russian:
        stem = name.removesuffix(".md")
        assert f"{stem}.ru.md" in russian or f"{stem}_RU.md" in russian, f"docs/{name} has no .ru.md twin"
    for name in russian:
        stem = name.removesuffix(".ru.md").removesuffix("_RU.md")
        assert f"{stem}.md" in names, f"docs/{name} has no English original"


@pytest.mark.parametrize("name", top_level_docs())
def test_docs_front_matter_is_valid_and_has_no_lang_key(name: str) -> None:
    # pkg/linters/docs/rules/frontmatter.go, no_lang_key.go
    text = (ROOT / "docs" / name).read_text()
    if not name.endswith((".ru.md", "_RU.md")):
        # pkg/linters/docs/rules/cyrillic_in_english.go: with front matter or without
        lines = [n for n, line in enumerate(text.splitlines(), 1) if CYRILLIC.search(line)]
        assert not lines, f"docs/{name}: Cyrillic on lines {lines}"
    found = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    front = (yaml.safe_load(found.group(1)) or {}) if found is not None else {}  # front matter is optional
    assert isinstance(front, dict), name
    assert "lang" not in front, f"docs/{name}: the language comes from the file name, not `lang`"


def test_no_cyrillic_outside_russian_files() -> None:
    # pkg/linters/no-cyrillic: .yaml, .yml, .json and .go files, except the Russian ones
    # (doc-ru-*, *.ru.*, *_RU.*) and module.yaml, whose descriptions.ru is Russian by design.
    found = []
    for name in project_files():
        base = name.rsplit("/", 1)[-1]
        if not name.endswith((".yaml", ".yml", ".json", ".go")):
            continue
        if base.startswith("doc-ru-") or ".ru." in base or "_RU." in base or name == "module.yaml":
            continue
        text = (ROOT / name).read_text(errors="replace")
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if CYRILLIC.search(line)]
    assert not found, found
