# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's alerts: promtool unit tests of every alert, firing and quiet, and the Deckhouse
conventions every alert follows (severity, tier, summary, a description with what to do)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.helm_chart import MONITORING_APIS, render
from tests.support.module_values import module_values
from tests.support.prometheus_rules import as_prometheus_loads, rule_files
from tests.support.promtool_tests import TESTS_DIR, missing_coverage, run_unit_tests, unit_test_files

ALERT_NAME = re.compile(r"^D8GPU[A-Z][A-Za-z]+$")


def alerts() -> list[dict[str, object]]:
    return [
        rule
        for path in rule_files()
        for group in yaml.safe_load(as_prometheus_loads(path))["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def test_every_alert_passes_its_promtool_unit_tests(tmp_path: Path) -> None:
    outcome = run_unit_tests(tmp_path)
    assert outcome.ok, outcome.output
    assert "SUCCESS" in outcome.output


def test_every_alert_is_tested_firing_and_quiet() -> None:
    assert rule_files(), "no rule files"
    assert missing_coverage(rule_files(), unit_test_files()) == []


def test_the_coverage_check_names_what_is_missing(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "- name: g\n  rules:\n"
        "    - {alert: D8GPUA, expr: x > 0, for: 1m}\n"
        "    - {alert: D8GPUB, expr: y > 0, for: 1m}\n"
    )
    tests = tmp_path / "rules.test.yaml"
    tests.write_text(
        "rule_files: [rules.yaml]\ntests:\n  - interval: 1m\n    alert_rule_test:\n"
        "      - {eval_time: 1m, alertname: D8GPUA, exp_alerts: [{exp_labels: {}}]}\n"
        "      - {eval_time: 1m, alertname: D8GPUC, exp_alerts: []}\n"
    )
    assert missing_coverage([rules], [tests]) == [
        "D8GPUA (rules.yaml) has no test where it stays quiet",
        "D8GPUB (rules.yaml) has no test where it fires",
        "D8GPUB (rules.yaml) has no test where it stays quiet",
        "a test checks D8GPUC, which no rule file defines",
    ]


def test_a_wrong_expectation_fails_the_unit_tests(tmp_path: Path) -> None:
    # The harness must surface promtool's failures: the same test against a rule that never fires.
    (source := tmp_path / "source").mkdir()
    (work := tmp_path / "work").mkdir()
    original = next(p for p in rule_files() if p.name == "inventory.yaml")
    broken = source / "inventory.yaml"
    broken.write_text(original.read_text().replace("for: 5m", "for: 50m", 1))
    outcome = run_unit_tests(work, [broken], [TESTS_DIR / "inventory.test.yaml"])
    assert not outcome.ok
    assert "D8GPUCardUnhealthy" in outcome.output


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: str(rule["alert"]))
def test_every_alert_follows_the_deckhouse_conventions(rule: dict[str, object]) -> None:
    assert ALERT_NAME.match(str(rule["alert"]))
    assert rule.get("for"), "always set for:"
    labels = rule["labels"]
    assert isinstance(labels, dict)
    assert labels["severity_level"] in {str(n) for n in range(1, 10)}
    assert labels["tier"] == "cluster"
    assert labels["d8_module"] == "gpu"
    annotations = rule["annotations"]
    assert isinstance(annotations, dict)
    assert annotations["plk_protocol_version"] == "1"
    assert annotations["plk_markup_format"] == "markdown"
    summary, description = str(annotations["summary"]), str(annotations["description"])
    assert "\n" not in summary.strip()
    assert "What to do" in description or "need no action" in description or "d8 k" in description
    assert "`d8 k " in description or "nvidia-smi" in description or "dmesg" in description


def test_every_rule_file_is_shipped_by_the_chart() -> None:
    rendered = render(module_values(), api_versions=MONITORING_APIS)
    objects = {o["metadata"]["name"]: o for o in rendered.of_kind("PrometheusRule")}
    assert sorted(objects) == sorted(f"gpu-{p.stem}" for p in rule_files())
    for path in rule_files():
        shipped = objects[f"gpu-{path.stem}"]
        assert shipped["metadata"]["namespace"] == "d8-monitoring"
        assert shipped["spec"]["groups"] == yaml.safe_load(as_prometheus_loads(path))["groups"]
