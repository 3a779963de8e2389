# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The release notes of a module version, read from CHANGELOG/<version>.yml and printed as Markdown.

The file is in Deckhouse's changelog format (deckhouse/deckhouse CHANGELOG/CHANGELOG-v*.yml): a
mapping from a component (kebab-case) to its sections, `features` and `fixes`, each a list of
entries with a `summary`, a `pull_request` (a link, or "" for changes older than the repository's
pull requests) and an optional `impact`. Anything else is an error that names the file and the
place, so a malformed changelog never turns into silently short notes.

Usage: tools/release-notes VERSION [--changelog-dir DIR]    (make release-notes VERSION=v0.1.0)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG_DIR = ROOT / "CHANGELOG"
MODULE_NAME = "gpu"
# The module version is the git tag; Deckhouse and the CI accept vMAJOR.MINOR.PATCH only.
VERSION = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
COMPONENT = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SECTIONS = {"features": "Features", "fixes": "Fixes"}
REQUIRED = ("summary", "pull_request")
OPTIONAL = ("impact",)
LINK = re.compile(r"^https://\S+$")


class ChangelogError(Exception):
    """A missing or malformed changelog; the message names the file."""


@dataclass(frozen=True)
class Entry:
    summary: str
    pull_request: str
    impact: str


Changelog = dict[str, dict[str, list[Entry]]]


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice, which PyYAML would otherwise overwrite."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def check_version(version: str) -> str:
    if not VERSION.fullmatch(version):
        raise ChangelogError(f"{version!r} is not a module version: versions are vMAJOR.MINOR.PATCH")
    return version


def versions(directory: Path) -> list[str]:
    found = [p.stem for p in directory.glob("v*.yml") if VERSION.fullmatch(p.stem)]
    return sorted(found, key=lambda v: tuple(int(part) for part in v[1:].split(".")))


def parse(text: str, source: str) -> Changelog:
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        raise ChangelogError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(document, dict) or not document:
        raise ChangelogError(f"{source}: expected a mapping of components to their changes")
    changelog: Changelog = {}
    for component, sections in document.items():
        if not isinstance(component, str) or not COMPONENT.match(component):
            raise ChangelogError(f"{source}: {component!r} is not a component name (kebab-case)")
        changelog[component] = _sections(sections, f"{source}: {component}")
    return changelog


def _sections(value: Any, where: str) -> dict[str, list[Entry]]:
    if not isinstance(value, dict) or not value:
        raise ChangelogError(f"{where}: expected sections {sorted(SECTIONS)}")
    unknown = sorted(str(name) for name in value if name not in SECTIONS)
    if unknown:
        raise ChangelogError(f"{where}: unknown sections {unknown}, expected {sorted(SECTIONS)}")
    sections: dict[str, list[Entry]] = {}
    for name, entries in value.items():
        if not isinstance(entries, list) or not entries:
            raise ChangelogError(f"{where}.{name}: expected a non-empty list of entries")
        sections[name] = [_entry(entry, f"{where}.{name}[{i}]") for i, entry in enumerate(entries)]
    return sections


def _entry(value: Any, where: str) -> Entry:
    if not isinstance(value, dict):
        raise ChangelogError(f"{where}: expected a mapping with {list(REQUIRED)}")
    missing = [key for key in REQUIRED if key not in value]
    if missing:
        raise ChangelogError(f"{where}: missing {missing}")
    unknown = sorted(str(key) for key in value if key not in REQUIRED + OPTIONAL)
    if unknown:
        raise ChangelogError(f"{where}: unknown keys {unknown}")
    for key in (*REQUIRED, *OPTIONAL):
        if key in value and not isinstance(value[key], str):
            raise ChangelogError(f"{where}: {key} must be a string")
    summary, link, impact = value["summary"].strip(), value["pull_request"].strip(), value.get("impact", "")
    if not summary:
        raise ChangelogError(f"{where}: the summary is empty")
    if link and not LINK.match(link):
        raise ChangelogError(f"{where}: pull_request must be an https:// link or empty, not {link!r}")
    return Entry(summary=summary, pull_request=link, impact=impact.strip())


def load(version: str, directory: Path = CHANGELOG_DIR) -> Changelog:
    path = directory / f"{check_version(version)}.yml"
    if not path.is_file():
        known = ", ".join(versions(directory)) or "none"
        raise ChangelogError(f"no release notes for {version}: {path} does not exist (known: {known})")
    return parse(path.read_text(encoding="utf-8"), str(path))


def _flow(text: str) -> str:
    return " ".join(text.split())


def render(version: str, changelog: Changelog) -> str:
    lines = [f"# {MODULE_NAME} {version}"]
    for component in changelog:
        lines += ["", f"## {component}"]
        for section, title in SECTIONS.items():
            entries = changelog[component].get(section)
            if not entries:
                continue
            lines += ["", f"### {title}", ""]
            for entry in entries:
                link = f" ({entry.pull_request})" if entry.pull_request else ""
                lines.append(f"- {_flow(entry.summary)}{link}")
                if entry.impact:
                    lines.append(f"  **Impact:** {_flow(entry.impact)}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="release-notes", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("version", help="the module version, vX.Y.Z (the git tag)")
    parser.add_argument("--changelog-dir", type=Path, default=CHANGELOG_DIR, help="default: CHANGELOG/")
    args = parser.parse_args(argv)
    try:
        notes = render(args.version, load(args.version, args.changelog_dir))
    except ChangelogError as error:
        print(f"release-notes: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(notes)
    return 0
