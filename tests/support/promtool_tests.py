# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Runs the promtool unit tests of the module's alert rules (tests/module/alert_rule_tests).

Each rule file is brought to what Prometheus loads (``prometheus_rules.as_prometheus_loads``) and
written beside the test files under its own name, so a test names ``rule_files: [dcgm.yaml]``.
promtool compares every annotation of an alert exactly; the tests pin each alert's labels and its
``summary`` (the line a notification shows), so the copies they run against keep ``summary`` and
drop the long ``description`` and the static ``plk_*`` annotations, whose templates
``promtool check rules`` checks.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.prometheus_rules import ROOT, as_prometheus_loads, promtool, rule_files

TESTS_DIR = ROOT / "tests" / "module" / "alert_rule_tests"
KEPT_ANNOTATIONS = ("summary",)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    output: str


def summary_only(document: str) -> str:
    loaded = yaml.safe_load(document)
    for group in loaded["groups"]:
        for rule in group["rules"]:
            kept = {k: v for k, v in (rule.get("annotations") or {}).items() if k in KEPT_ANNOTATIONS}
            rule["annotations"] = kept
    return yaml.safe_dump(loaded, sort_keys=False)


def unit_test_files(directory: Path = TESTS_DIR) -> list[Path]:
    return sorted(directory.glob("*.test.yaml"))


def run_unit_tests(work: Path, rules: list[Path] | None = None, tests: list[Path] | None = None) -> Outcome:
    """``promtool test rules`` over ``tests`` against ``rules``, staged in ``work``."""
    for path in rule_files() if rules is None else rules:
        (work / f"{path.stem}.yaml").write_text(summary_only(as_prometheus_loads(path)))
    staged = []
    for path in unit_test_files() if tests is None else tests:
        staged.append(work / path.name)
        shutil.copyfile(path, staged[-1])
    done = subprocess.run(
        [str(promtool()), "test", "rules", *map(str, staged)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=work,
    )
    return Outcome(done.returncode == 0, done.stdout + done.stderr)


def alerts_of(paths: list[Path]) -> dict[str, Path]:
    found = {}
    for path in paths:
        for group in yaml.safe_load(as_prometheus_loads(path))["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    found[rule["alert"]] = path
    return found


def coverage(tests: list[Path]) -> dict[str, set[str]]:
    """Alert name -> {"fires", "quiet"}: whether some test expects it firing, and some test
    expects it not firing, at some evaluation time."""
    seen: dict[str, set[str]] = defaultdict(set)
    for path in tests:
        document: dict[str, Any] = yaml.safe_load(path.read_text())
        for case in document.get("tests") or ():
            for check in case.get("alert_rule_test") or ():
                seen[check["alertname"]].add("fires" if check.get("exp_alerts") else "quiet")
    return dict(seen)


def missing_coverage(rules: list[Path], tests: list[Path]) -> list[str]:
    """What the tests leave out: an alert without a firing or a quiet case, or a test of an alert
    that no rule file defines."""
    alerts, covered = alerts_of(rules), coverage(tests)
    problems = [
        f"{name} ({alerts[name].name}) has no test where it {'fires' if need == 'fires' else 'stays quiet'}"
        for name in sorted(alerts)
        for need in ("fires", "quiet")
        if need not in covered.get(name, set())
    ]
    problems += [
        f"a test checks {name}, which no rule file defines" for name in sorted(set(covered) - set(alerts))
    ]
    return problems
