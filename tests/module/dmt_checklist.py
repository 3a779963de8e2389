# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""What the dmt checklist tests share: the module's files, its dmt configuration (.dmtlint.yaml),
the static reading of the Helm templates, dmt's key paths of OpenAPI schemas and its enum rule,
and version constraints.

dmt is the Deckhouse module linter (repository deckhouse/dmt); each rule ported here names the dmt
source file it follows.
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MODULE_NAME = "gpu"
NAMESPACE = "d8-gpu"
DMTLINT = ROOT / ".dmtlint.yaml"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def dmtlint() -> dict[str, Any]:
    config: dict[str, Any] = load_yaml(DMTLINT) or {}
    settings: dict[str, Any] = config.get("linters-settings") or {}
    return settings


def setting(*path: str) -> Any:
    """A value of linters-settings, None when absent."""
    node: Any = dmtlint()
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def project_files() -> list[str]:
    """Files of the repository: tracked, and untracked unless git ignores them (a new file that
    another change adds). Read-only git."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    names = {name for name in done.stdout.decode().split("\0") if name}
    return sorted(name for name in names if (ROOT / name).is_file() and not (ROOT / name).is_symlink())


# --- Helm templates, read statically -----------------------------------------------------------

CHART_NAME = re.compile(r"\{\{-?\s*\$?\.Chart\.Name\s*-?\}\}")


@dataclass(frozen=True)
class TemplateObject:
    path: str  # relative to the repository, e.g. templates/gpu-controller/rbac-for-us.yaml
    kind: str
    name: str
    namespace: str | None
    text: str


def template_files() -> list[Path]:
    return sorted(p for p in (ROOT / "templates").rglob("*") if p.suffix in (".yaml", ".yml", ".tpl"))


def template_objects() -> list[TemplateObject]:
    """Each document of templates/**.yaml with its top-level kind and metadata name/namespace,
    `.Chart.Name` read as the module name. Documents without a literal kind are skipped."""
    found = []
    for path in template_files():
        if path.suffix == ".tpl":
            continue
        text = CHART_NAME.sub(MODULE_NAME, path.read_text())
        for document in re.split(r"^---\s*$", text, flags=re.MULTILINE):
            kind = re.search(r"^kind:\s*(\S+)", document, re.MULTILINE)
            metadata = re.search(r"^metadata:\n((?:[ \t]+.*\n?)+)", document, re.MULTILINE)
            if kind is None or metadata is None:
                continue
            name = re.search(r"^  name:\s*(\S+)", metadata.group(1), re.MULTILINE)
            namespace = re.search(r"^  namespace:\s*(\S+)", metadata.group(1), re.MULTILINE)
            found.append(
                TemplateObject(
                    path=str(path.relative_to(ROOT)),
                    kind=kind.group(1),
                    name=name.group(1).strip("\"'") if name else "",
                    namespace=namespace.group(1).strip("\"'") if namespace else None,
                    text=document,
                )
            )
    return found


# --- OpenAPI, as dmt walks it (deckhouse/dmt internal/openapi/parser.go) ----------------------


def key_paths(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (absolute key, value) of a YAML tree as dmt names them: map keys joined with '.',
    list items as [index]."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path, value
            yield from key_paths(value, path)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from key_paths(value, f"{prefix}[{index}]")


def enum_problem(value: str) -> str | None:
    """dmt's enum rule for one value (deckhouse/dmt pkg/linters/openapi/rules/enum.go): a letter
    first must be upper case; then only letters, digits, and a dot right after a digit."""
    if value == "":
        return None
    if value[0].isalpha() and not value[0].isupper():
        return f"{value!r} must start with a capital letter"
    for index, char in enumerate(value):
        if char.isalpha() or unicodedata.category(char).startswith("N"):
            continue
        if char == "." and index != 0 and unicodedata.category(value[index - 1]).startswith("N"):
            continue
        return f"{value!r} must be CamelCase"
    return None


def enum_excluded(key: str, excludes: list[str]) -> bool:
    """Whether dmt skips the enum at `key` (ending in `.enum`): listed as is, or with its first
    list index written as [*]."""
    listed = {f"{e}.enum" for e in excludes}
    if key in listed:
        return True
    index = re.search(r"\[\d+\]", key)
    return index is not None and key.replace(index.group(0), "[*]") in listed


def openapi_files() -> list[Path]:
    """The schemas dmt lints: openapi/*.yaml and crds/*.yaml, without doc-ru- and -tests files."""
    found = []
    for folder in ("openapi", "crds"):
        for path in sorted((ROOT / folder).rglob("*")):
            name = path.name
            if path.suffix not in (".yaml", ".yml") or name.startswith("doc-ru-"):
                continue
            if name.endswith(("-tests.yaml", "-tests.yml")):
                continue
            found.append(path)
    return found


def documents(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


# --- Version constraints (the Masterminds/semver forms module.yaml uses) -----------------------

VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
TERM = re.compile(r"^(>=|<=|!=|>|<|=)?\s*(\S+)$")


def version(text: str) -> tuple[int, int, int]:
    found = VERSION.match(text.strip())
    if found is None:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(part or 0) for part in found.groups())  # type: ignore[return-value]


def allows(constraint: str, candidate: str) -> bool:
    """Whether `candidate` satisfies `constraint`: terms joined by commas or spaces (all must
    hold), alternatives by `||`. Raises ValueError on a form it does not know (~, ^, wildcards)."""
    target = version(candidate)
    for alternative in constraint.split("||"):
        terms = re.findall(r"(?:>=|<=|!=|>|<|=)?\s*[^\s,]+", alternative)
        if not terms:
            raise ValueError(f"empty constraint: {constraint!r}")
        results = []
        for term in terms:
            found = TERM.match(term.strip())
            if found is None:
                raise ValueError(f"unknown constraint term: {term!r}")
            operator, bound = found.group(1) or "=", version(found.group(2))
            results.append(
                {
                    ">=": target >= bound,
                    "<=": target <= bound,
                    ">": target > bound,
                    "<": target < bound,
                    "=": target == bound,
                    "!=": target != bound,
                }[operator]
            )
        if all(results):
            return True
    return False
