# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Comments cite the design notes of this repository and nothing outside it.

Two documents are cited by entry number: docs/internal/DESIGN.md, the design (decisions
``DESIGN.md D6``, specification items ``DESIGN.md S9.2.2``), and docs/internal/KUBERNETES-FACTS.md,
the reference of what Kubernetes and CDI do (``KUBERNETES-FACTS.md F4.3``). The code used to cite
team documents that a reader of the repository does not have (the architecture page, the
Kubernetes DRA facts file, the Russian technical specification); their content lives in those two
files, whose entries keep the old numbers. Checks over every text file of the code, chart, hooks,
tests, test kit, benchmarks and tools (this file excepted, it has to name the patterns), and for
citations also over the documentation:

- no citation of an outside document is left;
- every ``DESIGN.md <entry>`` or ``KUBERNETES-FACTS.md <entry>`` citation (also lists and ranges
  such as ``DESIGN.md S9.2.2, D9`` or ``KUBERNETES-FACTS.md F1.1-F1.7``) names an entry that is a
  heading of that file: decisions and specification items in DESIGN.md, facts in
  KUBERNETES-FACTS.md;
- every link to a heading of either file (``DESIGN.md#d6-...``) names a heading that exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "internal" / "DESIGN.md"
FACTS = ROOT / "docs" / "internal" / "KUBERNETES-FACTS.md"
# What each cited document numbers: the design its decisions and specification items, the facts file
# its facts.
CITED = {"DESIGN.md": (DESIGN, "DS"), "KUBERNETES-FACTS.md": (FACTS, "F")}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
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
# "DESIGN.md D6", "DESIGN.md S9.2.2, D9", "DESIGN.md S7.2/S7.3", "KUBERNETES-FACTS.md F1.1-F1.7",
# "DESIGN.md D2, D3 and D6"; a citation may wrap onto a comment's next line.
CITATION = re.compile(
    rf"\b(DESIGN|KUBERNETES-FACTS)\.md[\s#/*]+({ENTRY}(?:(?:\s*(?:,|/|-|\u2013|\band\b)\s*|\s+){ENTRY})*)"
)
HEADING = re.compile(rf"^#{{1,6}}\s+({ENTRY})\.?\s", re.MULTILINE)
ANY_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
# A markdown link to a heading of one of the cited documents: "(DESIGN.md#d6-sharing-is-opt-in-per-node)".
ANCHOR_LINK = re.compile(r"\]\((?:[\w./-]*/)?(DESIGN|KUBERNETES-FACTS)\.md#([^)\s]+)\)")


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


def doc_texts() -> Iterator[tuple[str, str]]:
    for path in DOCS:
        yield str(path.relative_to(ROOT)), path.read_text()


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def entries_of(path: Path) -> list[str]:
    return HEADING.findall(path.read_text())


def anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


@pytest.mark.parametrize("name", sorted(CITED))
def test_entries_are_unique_headings(name: str) -> None:
    path, kinds = CITED[name]
    found = entries_of(path)
    duplicates = sorted({entry for entry in found if found.count(entry) > 1})
    assert not duplicates, f"{name} has several headings for {duplicates}"
    strangers = sorted({entry for entry in found if entry[0] not in kinds})
    assert not strangers, f"{name} numbers only {'/'.join(kinds)} entries, not {strangers}"


def test_the_numbers_cited_from_the_code_stay() -> None:
    assert {f"D{n}" for n in range(1, 16)} <= set(entries_of(DESIGN)), "DESIGN.md must keep D1..D15"
    facts = {f"F{n}" for n in (1, 2, 3, 4, 5, 6, 7, 9, 10)}
    assert facts <= set(entries_of(FACTS)), "KUBERNETES-FACTS.md must keep F1..F10 (F8 is unused)"


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


def test_every_citation_names_an_existing_entry() -> None:
    entries = {name: set(entries_of(path)) for name, (path, _) in CITED.items()}
    missing = []
    cited = dict.fromkeys(CITED, 0)
    for name, text in [*texts(), *doc_texts()]:
        for match in CITATION.finditer(text):
            document = f"{match.group(1)}.md"
            for entry in re.findall(ENTRY, match.group(2)):
                cited[document] += 1
                if entry in entries[document]:
                    continue
                hint = next((f": cite {other} {entry}" for other in CITED if entry in entries[other]), "")
                missing.append(f"{name}:{line_of(text, match.start())}: {document} has no {entry}{hint}")
    assert all(cited.values()), f"a document is never cited, is the pattern still right? {cited}"
    assert not missing, "\n".join(missing)


def test_every_link_to_a_heading_of_the_cited_documents_exists() -> None:
    anchors = {
        name: {anchor(heading) for heading in ANY_HEADING.findall(path.read_text())}
        for name, (path, _) in CITED.items()
    }
    broken = [
        f"{name}:{line_of(text, match.start())}: {match.group(1)}.md#{match.group(2)}"
        for name, text in [*texts(), *doc_texts()]
        for match in ANCHOR_LINK.finditer(text)
        if match.group(2) not in anchors[f"{match.group(1)}.md"]
    ]
    broken += [
        f"{name}: #{target}"
        for name, (path, _) in CITED.items()
        for target in re.findall(r"\]\(#([^)\s]+)\)", path.read_text())
        if target not in anchors[name]
    ]
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)


def test_the_documentation_links_no_path_outside_the_repository() -> None:
    pattern = OUTSIDE["a path outside the repository"]
    found = [
        f"{path.relative_to(ROOT)}:{line_of(text, match.start())}"
        for path in DOCS
        for text in [path.read_text()]
        for match in pattern.finditer(text)
    ]
    assert not found, "link docs/internal/DESIGN.md instead: " + ", ".join(found)
