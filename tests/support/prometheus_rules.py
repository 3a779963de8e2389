# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Checks Deckhouse-style Prometheus rule files with promtool.

A file under ``monitoring/prometheus-rules`` is a YAML list of rule groups (Deckhouse wraps it in
a PrometheusRule), its ``__SCRAPE_INTERVAL__`` placeholders are substituted at render time, and a
``.tpl`` file goes through Helm's ``tpl``, where alert templates are escaped as
``{{`{{ $labels.x }}`}}``. promtool wants a ``groups:`` document, so each file is brought to what
Prometheus would finally load before it is checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "monitoring" / "prometheus-rules"
SCRAPE_INTERVAL_SECONDS = 30  # Deckhouse's default scrape interval
_PLACEHOLDER = re.compile(r"__SCRAPE_INTERVAL(?:_X_(\d+))?__")
_ESCAPED = re.compile(r"\{\{`(.*?)`\}\}", re.S)


class RuleFileError(ValueError):
    """The file is not what Deckhouse accepts, before promtool is even asked."""


@dataclass(frozen=True)
class Verdict:
    ok: bool
    output: str


def promtool() -> Path:
    path = Path(os.environ.get("PROMTOOL") or ROOT / ".tools" / "promtool")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run tools/fetch-promtool (make test does)")
    return path


def rule_files(directory: Path = RULES_DIR) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml", ".tpl"))


def as_prometheus_loads(path: Path) -> str:
    """The ``groups:`` document Prometheus gets from this file once Deckhouse has rendered it."""
    text = path.read_text()
    if path.suffix == ".tpl":
        unescaped = _ESCAPED.sub(lambda m: "\0" + m.group(1) + "\1", text)
        if "{{" in unescaped.replace("\0{{", "").replace("}}\1", ""):
            raise RuleFileError(f"{path.name}: an unescaped template action; escape it as {{{{`...`}}}}")
        text = unescaped.replace("\0", "").replace("\1", "")
    text = _PLACEHOLDER.sub(lambda m: f"{SCRAPE_INTERVAL_SECONDS * int(m.group(1) or 1)}s", text)
    groups = yaml.safe_load(text)
    if not isinstance(groups, list):
        raise RuleFileError(f"{path.name}: a rule file is a YAML list of groups, not {type(groups).__name__}")
    return yaml.safe_dump({"groups": groups}, sort_keys=False)


def check(path: Path) -> Verdict:
    try:
        document = as_prometheus_loads(path)
    except (RuleFileError, yaml.YAMLError) as error:
        return Verdict(False, str(error))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as rendered:
        rendered.write(document)
        rendered.flush()
        done = subprocess.run(
            [str(promtool()), "check", "rules", rendered.name],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    return Verdict(done.returncode == 0, done.stdout + done.stderr)
