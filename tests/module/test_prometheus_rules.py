# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``promtool check rules`` over monitoring/prometheus-rules, and proof that the check bites."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.prometheus_rules import RULES_DIR, as_prometheus_loads, check, promtool, rule_files

GOOD = """\
- name: d8.gpu.example
  rules:
    - alert: GPUExampleDown
      expr: up{job="gpu-example"} == 0
      for: __SCRAPE_INTERVAL_X_4__
      labels:
        severity_level: "6"
      annotations:
        summary: gpu-example is down
"""


def test_module_rules_pass_promtool() -> None:
    # One test over every file, so that the check runs (and promtool must work) before the
    # monitoring issue adds the first rule file.
    version = subprocess.run([str(promtool()), "--version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0
    assert "promtool" in version.stdout + version.stderr
    failures = {
        str(path.relative_to(RULES_DIR)): verdict.output
        for path in rule_files()
        if not (verdict := check(path)).ok
    }
    assert failures == {}


def test_a_valid_deckhouse_rule_file_passes(tmp_path: Path) -> None:
    path = tmp_path / "example.yaml"
    path.write_text(GOOD)
    verdict = check(path)
    assert verdict.ok, verdict.output
    assert "for: 120s" in as_prometheus_loads(path)  # __SCRAPE_INTERVAL_X_4__ at 30 s


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param(GOOD.replace("== 0", "== ) 0"), "parse error", id="broken-expression"),
        pytest.param(GOOD.replace("      for:", "      forr:"), "forr", id="unknown-key"),
        pytest.param(
            "groups:\n" + "\n".join("  " + line for line in GOOD.splitlines()) + "\n",
            "a YAML list of groups",
            id="plain-groups-document",
        ),
    ],
)
def test_a_bad_rule_file_fails_with_the_reason(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    verdict = check(path)
    assert not verdict.ok
    assert complaint in verdict.output


def test_a_template_file_is_checked_after_unescaping(tmp_path: Path) -> None:
    path = tmp_path / "example.tpl"
    path.write_text(GOOD.replace("gpu-example is down", '"{{`{{ $labels.instance }}`}} is down"'))
    verdict = check(path)
    assert verdict.ok, verdict.output
    assert "{{ $labels.instance }} is down" in as_prometheus_loads(path)
    path.write_text(GOOD.replace("gpu-example is down", '"{{ .Values.gpu.x }} is down"'))
    assert "unescaped template action" in check(path).output
