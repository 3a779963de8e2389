# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DESIGN.md D20 lists the files a new sharing strategy and a new per-device CDI edit touch: each
file it names is in the tree (a ``<name>`` stands for the new module), and the registries it names
are where it says."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import deckhouse_gpu
from deckhouse_gpu.domain.config import features
from deckhouse_gpu.services.prepare import prepare_steps

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(deckhouse_gpu.__file__).parent
LAYERS = ("domain/", "ports/", "services/", "adapters/", "cmd/", "simulator/")


def d20() -> str:
    text = (ROOT / "docs" / "internal" / "DESIGN.md").read_text()
    found = re.search(r"^### D20\. .*?(?=^##)", text, re.MULTILINE | re.DOTALL)
    assert found is not None, "DESIGN.md has no D20"
    return found.group(0)


def named_files(section: str) -> list[str]:
    """The paths in backquotes that name a file (a module, a doc, a CRD)."""
    return [path for path in re.findall(r"`([^`\s]+\.(?:py|md|yaml))`", section) if "/" in path]


def test_every_file_d20_names_is_in_the_tree() -> None:
    files = named_files(d20())
    assert len(files) >= 20
    missing = []
    for named in files:
        path = named.rsplit("/", 1)[0] if "<" in named else named  # a new module: its folder exists
        where = PACKAGE / path if named.startswith(LAYERS) else ROOT / path
        if not where.exists():
            missing.append(named)
    assert missing == []


def test_each_strategy_and_feature_lives_where_d20_says() -> None:
    section = d20()
    assert "`STRATEGIES`" in section
    assert "`FEATURES`" in section
    for strategy in features.STRATEGIES:
        assert type(strategy).__module__.startswith("deckhouse_gpu.domain.config.")
    for strategy in features.STRATEGIES:  # its plan is its own, from its own module
        plan = strategy.plan(strategy.config(), None, None, None)  # at its default settings
        assert type(plan).__module__ == type(strategy).__module__
    assert "`FeatureRelease`" in section
    for feature in prepare_steps.FEATURES:
        steps = (*feature.checks, *feature.devices, *feature.settings, *feature.files)
        modules = {type(step).__module__ for step in steps}
        assert len(modules) == 1, feature.name
        home = modules.pop()
        assert re.fullmatch(r"deckhouse_gpu\.services\.prepare\.prepare_\w+_steps", home), feature.name
        # Its release parts: in its steps module, or a release module D20 names.
        parts = [getattr(feature.release, f.name) for f in fields(feature.release)]
        for part in (p for p in parts if callable(p)):
            where = part.__module__
            assert (
                where == home or f"`{where.removeprefix('deckhouse_gpu.').replace('.', '/')}.py`" in section
            )
