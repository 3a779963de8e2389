# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
"""What the CI of the module promises beyond what the linters check (tests/module/test_workflows.py):
every third-party action pinned to the commit of a known release, least-privilege permissions,
registries and credentials only from variables and secrets, the module name and the version format
the same everywhere, and the channels in Deckhouse's promotion order (docs/RELEASE.md).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools import release_notes

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / ".github"
WORKFLOWS = {p.stem: p for p in sorted((GITHUB / "workflows").glob("*.yml"))}
ACTIONS = {p.parent.name: p for p in sorted((GITHUB / "actions").glob("*/action.yml"))}

# Every third-party action: the commit it is pinned to and the release that commit is. Changing a
# pin means changing it here too, after checking the commit (git ls-remote <repository> <ref>).
# werf/actions versions by branch, not by tag: its pin is the head of the v2 branch.
PINS = {
    "actions/checkout": ("08c6903cd8c0fde910a37f88322edcfb5dd907a8", "v5.0.0"),
    "actions/setup-python": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
    "actions/setup-go": ("44694675825211faa026b3c33043df3e48a5fa00", "v6.0.0"),
    "imjasonh/setup-crane": ("31b88efe9de28ae0ffa220711af4b60be9435f6e", "v0.4"),
    "werf/actions/install": ("49e2d1cf7fcda661767ee6d8205f3fb4687e684d", "v2"),
}
# The registry tags of the release channels, in Deckhouse's promotion order.
CHANNELS = ["alpha", "beta", "early-access", "stable", "rock-solid"]
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(?:\s+#\s*(\S+))?\s*$")
EXPRESSION = re.compile(r"^\$\{\{\s*(vars|secrets)\.([A-Z][A-Z0-9_]*)\s*\}\}$")


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict), path
    return document


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    on = workflow.get("on", workflow.get(True))
    assert isinstance(on, dict), on
    return on


def steps() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, path in WORKFLOWS.items():
        for job_name, job in load(path)["jobs"].items():
            found += [(f"{name}.{job_name}", step) for step in job["steps"]]
    for name, path in ACTIONS.items():
        found += [(name, step) for step in load(path)["runs"]["steps"]]
    return found


def uses_lines() -> list[tuple[str, str, str | None]]:
    found = []
    for path in [*WORKFLOWS.values(), *ACTIONS.values()]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if match := USES.match(line):
                found.append((f"{path.relative_to(ROOT)}:{number}", match.group(1), match.group(2)))
    return found


def test_every_third_party_action_is_pinned_to_the_commit_of_its_release() -> None:
    used = set()
    for where, ref, comment in uses_lines():
        if ref.startswith("./"):
            assert (ROOT / ref / "action.yml").is_file(), f"{where}: no action at {ref}"
            continue
        name, _, sha = ref.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", sha), f"{where}: {ref} is not pinned to a full commit SHA"
        assert name in PINS, f"{where}: {name} is not a known action; add it to PINS with its release"
        assert (sha, comment) == PINS[name], f"{where}: {ref} # {comment}, expected {PINS[name]}"
        used.add(name)
    assert used == set(PINS), f"pins nobody uses: {set(PINS) - used}"


def test_permissions_are_empty_by_default_and_read_only_per_job() -> None:
    for name, path in WORKFLOWS.items():
        workflow = load(path)
        assert workflow["permissions"] == {}, f"{name}: the top level grants nothing"
        for job_name, job in workflow["jobs"].items():
            assert job["permissions"] == {"contents": "read"}, f"{name}.{job_name}: {job['permissions']}"


def test_checkouts_keep_no_credentials() -> None:
    checkouts = [
        (where, step) for where, step in steps() if step.get("uses", "").startswith("actions/checkout@")
    ]
    assert checkouts
    for where, step in checkouts:
        assert step["with"]["persist-credentials"] is False, where


def test_registries_and_credentials_come_from_variables_and_secrets() -> None:
    given = {"registry", "registry-login", "registry-password", "module-source", "dev-module-source"}
    given |= {"base-images-url", "base-images-sha256"}
    seen = set()
    for where, step in steps():
        for key, value in (step.get("with") or {}).items():
            if key not in given:
                continue
            match = EXPRESSION.match(str(value))
            assert match, f"{where}: {key} must come from a variable or a secret, not {value!r}"
            assert (match.group(1) == "secrets") == key.endswith("password"), f"{where}: {key}: {value}"
            seen.add(key)
    assert seen == given


def strings(node: Any, key: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [s for k, v in node.items() if k != "description" for s in strings(v, str(k))]
    if isinstance(node, list):
        return [s for item in node for s in strings(item, key)]
    return [(key, node)] if isinstance(node, str) else []


def test_no_host_names_are_written_in_the_files() -> None:
    # Outside the ${{ }} expressions, which name variables, not hosts.
    host = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:io|com|ru|net|org|dev|cloud)\b")
    allowed = {"github.com"}  # in the Go module path of `go install` (lint.yml), not a registry
    checked = 0
    for path in [*WORKFLOWS.values(), *ACTIONS.values()]:
        for key, value in strings(load(path)):
            hosts = set(host.findall(re.sub(r"\$\{\{.*?\}\}", "", value))) - allowed
            assert not hosts, f"{path.relative_to(ROOT)}: {key} names {hosts}"
            checked += 1
    assert checked > 50


def test_the_module_name_is_the_one_of_module_yaml() -> None:
    name = load(ROOT / "module.yaml")["name"]
    assert load(WORKFLOWS["build"])["env"]["MODULE_NAME"] == name
    assert load(WORKFLOWS["deploy"])["env"]["MODULE_NAME"] == name
    assert re.search(r"^project: (\S+)$", (ROOT / "werf.yaml").read_text(), re.M)[1] == name  # type: ignore[index]


def test_the_build_runs_for_pull_requests_and_version_tags_and_skips_forks() -> None:
    build = load(WORKFLOWS["build"])
    on = triggers(build)
    assert set(on) == {"pull_request", "push"}
    assert on["push"] == {"tags": ["v*"]}
    job = build["jobs"]["build"]
    assert "head.repo.full_name == github.repository" in job["if"]
    assert job["environment"] == "dev"
    assert [s["uses"] for s in job["steps"] if s.get("uses", "").startswith("./")] == [
        "./.github/actions/module-setup",
        "./.github/actions/module-build",
    ]


def test_the_deploy_is_manual_with_the_channels_in_promotion_order() -> None:
    deploy = load(WORKFLOWS["deploy"])
    inputs = triggers(deploy)["workflow_dispatch"]["inputs"]
    assert set(triggers(deploy)) == {"workflow_dispatch"}
    assert inputs["release_channel"]["options"] == CHANNELS
    assert inputs["tag"]["required"] is True
    assert deploy["jobs"]["deploy"]["environment"] == "release"
    assert deploy["concurrency"]["cancel-in-progress"] is False
    script = (ACTIONS["module-deploy"]).read_text()
    previous = dict(re.findall(r"^\s+([a-z-]+)\) previous=([a-z-]+) ;;$", script, re.M))
    assert previous == dict(zip(CHANNELS[1:], CHANNELS, strict=False))
    assert re.search(r"^\s+alpha\) exit 0 ;;$", script, re.M)


def test_the_tests_workflow_runs_make_test_on_python_3_12() -> None:
    tests = load(WORKFLOWS["tests"])
    assert set(triggers(tests)) == {"pull_request", "push"}
    job_steps = tests["jobs"]["test"]["steps"]
    (python,) = [s for s in job_steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert python["with"]["python-version"] == "3.12"
    make_test, actionlint = job_steps[-2:]
    assert make_test["run"] == "make test"
    assert actionlint["run"].startswith(".venv/bin/actionlint")  # installed by the step before
    assert "-r requirements-ci.txt" in job_steps[-3]["run"]


def bash_regexes() -> set[str]:
    found = set()
    for path in WORKFLOWS.values():
        found |= set(re.findall(r"=~ (\^v\S+\$) \]\]", path.read_text()))
    return found


@pytest.mark.parametrize(
    "version",
    [
        "v0.1.0",
        "v1.22.333",
        "v10.0.0",
        "0.1.0",
        "v0.1",
        "v01.2.3",
        "v0.1.0-rc1",
        "pr12",
        "v0.1.0 ",
        "v0.1.0\n",
    ],
)
def test_the_workflows_and_the_release_notes_accept_the_same_versions(version: str) -> None:
    (pattern,) = bash_regexes()  # build.yml and deploy.yml use the same expression
    done = subprocess.run(["bash", "-c", f'[[ "$1" =~ {pattern} ]]', "_", version], check=False)
    assert (done.returncode == 0) == bool(release_notes.VERSION.fullmatch(version)), version


def test_the_tool_versions_are_pinned() -> None:
    inputs = load(ACTIONS["module-setup"])["inputs"]
    assert re.fullmatch(r"v2\.\d+\.\d+", inputs["werf-version"]["default"])
    assert re.fullmatch(r"v\d+\.\d+\.\d+", inputs["crane-version"]["default"])
    assert re.fullmatch(r"v\d+\.\d+\.\d+", load(WORKFLOWS["lint"])["env"]["DMT_VERSION"])
