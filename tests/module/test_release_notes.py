# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""tools/release-notes and the changelogs it reads (CHANGELOG/vX.Y.Z.yml, Deckhouse's format): the
notes of a real version, a version without notes, malformed changelogs, and `make release-notes`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import release_notes
from tools.release_notes import ChangelogError, load, parse, render

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "release-notes"
CHANGELOGS = sorted((ROOT / "CHANGELOG").glob("*.yml"))
# A component is a directory of images/ that builds one, or the module as a whole.
COMPONENTS = {p.parent.name for p in (ROOT / "images").glob("*/werf.inc.yaml")} - {"gpu-artifact"} | {
    "module"
}


def notes(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *map(str, args)], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_the_notes_of_v0_1_0() -> None:
    done = notes("v0.1.0")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("# gpu v0.1.0\n")
    for component in ("gpu-node-agent", "gpu-controller", "gpu-handler", "gpu-dra-controller", "module"):
        assert f"\n## {component}\n" in text
    assert "### Features" in text
    assert "**Impact:** The module is at the Experimental stage" in text
    # Folded YAML becomes one line per entry.
    assert all(line.startswith(("#", "- ", "  **Impact:**")) for line in text.splitlines() if line)


@pytest.mark.parametrize("path", CHANGELOGS, ids=[p.name for p in CHANGELOGS])
def test_every_changelog_is_a_version_and_well_formed(path: Path) -> None:
    assert release_notes.VERSION.fullmatch(path.stem), f"{path.name}: changelogs are named vX.Y.Z.yml"
    changelog = parse(path.read_text(), path.name)
    assert set(changelog) <= COMPONENTS, f"{path.name}: unknown components {set(changelog) - COMPONENTS}"


def test_a_version_without_notes_fails_naming_the_known_ones() -> None:
    done = notes("v9.9.9")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no release notes for v9.9.9" in done.stderr
    assert "known: v0.1.0" in done.stderr


@pytest.mark.parametrize("version", ["0.1.0", "v0.1", "v0.1.0-rc1", "pr12", "latest"])
def test_a_wrong_version_fails(version: str) -> None:
    done = notes(version)
    assert done.returncode == 1
    assert "is not a module version" in done.stderr


def test_no_version_is_a_usage_error() -> None:
    done = notes()
    assert done.returncode == 2
    assert "usage: release-notes" in done.stderr


ENTRY = "summary: Works.\n      pull_request: https://github.com/example/gpu/pull/1"
MALFORMED = {
    "invalid yaml": ("a: [b\n", "not valid YAML"),
    "empty file": ("", "expected a mapping of components"),
    "a list": ("- a\n- b\n", "expected a mapping of components"),
    "component name": ("GPU_Handler:\n  features:\n    - " + ENTRY + "\n", "not a component name"),
    "duplicate component": (
        "gpu-handler:\n  fixes:\n    - " + ENTRY + "\ngpu-handler:\n  features:\n    - " + ENTRY + "\n",
        "duplicate key 'gpu-handler'",
    ),
    "no sections": ("gpu-handler: {}\n", "expected sections"),
    "unknown section": ("gpu-handler:\n  feature:\n    - " + ENTRY + "\n", "unknown sections ['feature']"),
    "empty section": ("gpu-handler:\n  fixes: []\n", "gpu-handler.fixes: expected a non-empty list"),
    "entry not a mapping": (
        "gpu-handler:\n  fixes:\n    - just text\n",
        "gpu-handler.fixes[0]: expected a mapping",
    ),
    "no pull_request": ("gpu-handler:\n  fixes:\n    - summary: Works.\n", "missing ['pull_request']"),
    "no summary": ('gpu-handler:\n  fixes:\n    - pull_request: ""\n', "missing ['summary']"),
    "empty summary": (
        'gpu-handler:\n  fixes:\n    - summary: " "\n      pull_request: ""\n',
        "the summary is empty",
    ),
    "summary not text": (
        'gpu-handler:\n  fixes:\n    - summary: 42\n      pull_request: ""\n',
        "summary must be a string",
    ),
    "link not https": (
        "gpu-handler:\n  fixes:\n    - summary: Works.\n      pull_request: '#12'\n",
        "pull_request must be an https:// link or empty",
    ),
    "unknown key": (
        'gpu-handler:\n  fixes:\n    - summary: W.\n      pull_request: ""\n      pr: 1\n',
        "unknown keys ['pr']",
    ),
}


@pytest.mark.parametrize(("text", "complaint"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_changelog_is_refused_naming_the_place(text: str, complaint: str) -> None:
    with pytest.raises(ChangelogError, match=re.escape(complaint)) as error:
        parse(text, "CHANGELOG/v1.0.0.yml")
    assert str(error.value).startswith("CHANGELOG/v1.0.0.yml: ")


def test_a_malformed_changelog_fails_the_tool(tmp_path: Path) -> None:
    (tmp_path / "v1.0.0.yml").write_text("gpu-handler:\n  fixes:\n    - summary: Works.\n")
    done = notes("v1.0.0", "--changelog-dir", tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"{tmp_path / 'v1.0.0.yml'}: gpu-handler.fixes[0]: missing ['pull_request']" in done.stderr


def test_entries_render_with_their_link_and_impact(tmp_path: Path) -> None:
    (tmp_path / "v1.2.3.yml").write_text(
        "gpu-handler:\n"
        "  fixes:\n"
        "    - summary: >-\n        Fixes a\n        long line.\n"
        "      pull_request: https://github.com/example/gpu/pull/7\n"
        "      impact: gpu-handler restarts.\n"
        "  features:\n"
        '    - summary: Older.\n      pull_request: ""\n'
    )
    text = render("v1.2.3", load("v1.2.3", tmp_path))
    assert text == (
        "# gpu v1.2.3\n\n## gpu-handler\n\n"
        "### Features\n\n- Older.\n\n"
        "### Fixes\n\n- Fixes a long line. (https://github.com/example/gpu/pull/7)\n"
        "  **Impact:** gpu-handler restarts.\n"
    )


def test_versions_sort_as_numbers(tmp_path: Path) -> None:
    for name in ("v0.10.0.yml", "v0.9.1.yml", "v0.9.0.yml", "notes.yml", "v1.0.yml"):
        (tmp_path / name).write_text("")
    assert release_notes.versions(tmp_path) == ["v0.9.0", "v0.9.1", "v0.10.0"]


def test_make_release_notes_runs_the_tool_for_version() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^\.PHONY: release-notes$", makefile, re.M)
    target = re.search(r"^release-notes: (.+)\n\t(.+)$", makefile, re.M)
    assert target, "no release-notes target"
    assert target.group(1) == "$(VENV)/.installed"  # PyYAML, without building the whole package
    assert target.group(2) == "$(PY) tools/release-notes $(VERSION)"
    assert TOOL.stat().st_mode & 0o111, "tools/release-notes is executable"
