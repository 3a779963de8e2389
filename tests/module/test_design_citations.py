# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Comments cite the design notes of this repository, docs/internal/DESIGN.md, and nothing outside it.

The code used to cite team documents that a reader of the repository does not have: the
architecture page, the Kubernetes DRA facts file and the Russian technical specification, by path
(``../shared/...``) or by name with a section number. Their content now lives in DESIGN.md, whose
entries keep those numbers: decisions ``D1``..``D11``, Kubernetes facts ``F<section>`` and
specification items ``S<section>``. Two checks over every text file of the code, chart, hooks,
tests, test kit, benchmarks and tools (this file excepted, it has to name the patterns):

- no citation of an outside document is left;
- every ``DESIGN.md <entry>`` citation (also lists and ranges such as ``DESIGN.md S9.2.2, D9`` or
  ``DESIGN.md F1.1-F1.7``) names an entry that is a heading of DESIGN.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "internal" / "DESIGN.md"
SCANNED = ("images", "hooks", "templates", "tests", "testkit", "benchmarks", "tools")
THIS_FILE = Path(__file__).resolve()
# Caches, virtual environments and generated code (tools/gen-proto's kubelet_gen): not written by hand.
SKIPPED_DIRS = {
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".venv",
    "venv",
    "node_modules",
    "build",
    "dist",
    "kubelet_gen",
}

# Citations of documents that are not in the repository.
OUTSIDE = {
    "the architecture page": re.compile(r"\bARCHITECTURE(?:\.md\b| D\d)"),
    "the DRA facts file": re.compile(r"k8s-dra-facts|\bdra-facts\.md"),
    "the other team references": re.compile(
        r"prior-art-(?:dra-drivers|gpu-control-plane)|deckhouse-module-conventions"
    ),
    "a path outside the repository": re.compile(
        r"\.\./shared/|(?<![\w./-])shared/(?:design|reference|seeds)/"
    ),
    "the specification by number": re.compile(
        r"\b(?:[Ss]pecification|[Ss]pec|TZ)(?:'s)?(?: sections?)? \d+\.\d+|\bthe TZ\b|\bTZ's\b"
    ),
}

ENTRY = r"[DFS]\d+(?:\.\d+)*"
# "DESIGN.md D6", "DESIGN.md S9.2.2, D9", "DESIGN.md S7.2/S7.3", "DESIGN.md F1.1-F1.7",
# "DESIGN.md D2, D3 and D6"; a citation may wrap onto a comment's next line.
CITATION = re.compile(rf"DESIGN\.md[\s#/*]+({ENTRY}(?:(?:\s*(?:,|/|-|\u2013|\band\b)\s*|\s+){ENTRY})*)")
HEADING = re.compile(rf"^#{{1,6}}\s+({ENTRY})\.?\s", re.MULTILINE)


def scanned_files() -> Iterator[Path]:
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or path.resolve() == THIS_FILE:
                continue
            parts = path.relative_to(ROOT).parts
            if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts):
                continue
            yield path


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def texts() -> Iterator[tuple[str, str]]:
    for path in scanned_files():
        text = text_of(path)
        if text is not None:
            yield str(path.relative_to(ROOT)), text


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def design_entries() -> set[str]:
    return set(HEADING.findall(DESIGN.read_text()))


def test_design_entries_are_unique_headings() -> None:
    found = HEADING.findall(DESIGN.read_text())
    duplicates = sorted({entry for entry in found if found.count(entry) > 1})
    assert not duplicates, f"DESIGN.md has several headings for {duplicates}"
    assert {f"D{n}" for n in range(1, 12)} <= set(found), "DESIGN.md must keep the decisions D1..D11"


def test_nothing_cites_a_document_outside_the_repository() -> None:
    found: dict[tuple[str, int], set[str]] = {}
    lines: dict[tuple[str, int], str] = {}
    for name, text in texts():
        for what, pattern in OUTSIDE.items():
            for match in pattern.finditer(text):
                number = line_of(text, match.start())
                found.setdefault((name, number), set()).add(what)
                lines[name, number] = text.splitlines()[number - 1].strip()
    report = [
        f"{name}:{number}: {', '.join(sorted(found[name, number]))}: {lines[name, number]}"
        for name, number in sorted(found)
    ]
    assert not report, (
        f"{len(report)} citations of documents outside the repository; cite docs/internal/DESIGN.md:\n"
        + "\n".join(report)
    )


def test_every_design_citation_names_an_existing_entry() -> None:
    entries = design_entries()
    missing = []
    cited = 0
    for name, text in texts():
        for match in CITATION.finditer(text):
            for entry in re.findall(ENTRY, match.group(1)):
                cited += 1
                if entry not in entries:
                    missing.append(f"{name}:{line_of(text, match.start())}: DESIGN.md has no {entry}")
    assert cited, "no DESIGN.md citation found at all: is the pattern still right?"
    assert not missing, "\n".join(missing)


def test_the_documentation_links_no_path_outside_the_repository() -> None:
    pattern = OUTSIDE["a path outside the repository"]
    found = [
        f"{path.relative_to(ROOT)}:{line_of(text, match.start())}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for text in [path.read_text()]
        for match in pattern.finditer(text)
    ]
    assert not found, "link docs/internal/DESIGN.md instead: " + ", ".join(found)
