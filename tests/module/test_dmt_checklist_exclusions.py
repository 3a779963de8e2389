# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
""".dmtlint.yaml cannot rot: it uses only keys that dmt's configuration has (deckhouse/dmt
pkg/config/linters_settings.go), every exclusion carries a comment that says why, and every
exclusion is still needed, i.e. the rule it silences is really violated by the module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import yaml

from tests.module.dmt_checklist import (
    DMTLINT,
    ROOT,
    documents,
    enum_problem,
    key_paths,
    openapi_files,
    setting,
)
from tests.module.dmt_config_keys import IMPACTS, ITEM_KEYS, KNOWN_KEYS
from tests.module.helm_render_sets import RENDERED, containers
from tests.module.license_headers import check_file, dmt_selects


def unknown_keys(node: Any, schema: Any, path: str) -> list[str]:
    if isinstance(schema, dict):
        if not isinstance(node, dict):
            return [f"{path}: expected a mapping"]
        found = []
        for key, value in node.items():
            if key not in schema:
                found.append(f"{path}.{key}: dmt has no such setting")
            else:
                found += unknown_keys(value, schema[key], f"{path}.{key}")
        return found
    if schema == "impact":
        return [] if node in IMPACTS else [f"{path}: impact must be one of {sorted(IMPACTS)}"]
    if schema == "bool":
        return [] if isinstance(node, bool) else [f"{path}: expected true or false"]
    if not isinstance(node, list):
        return [f"{path}: expected a list"]
    if schema in ITEM_KEYS:
        return [
            f"{path}: {item!r} needs {sorted(ITEM_KEYS[schema])}"
            for item in node
            if set(item) - ITEM_KEYS[schema]
        ]
    return [f"{path}: {item!r} is not a string" for item in node if not isinstance(item, str)]


def test_dmtlint_uses_only_keys_dmt_knows() -> None:
    config = yaml.safe_load(DMTLINT.read_text())
    assert set(config) <= {"linters-settings"}, "module configuration holds linters-settings only"
    problems = unknown_keys(config["linters-settings"], KNOWN_KEYS, "linters-settings")
    assert not problems, problems


def exclusions(node: Any = None, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every exclusion: each non-empty exclude list, and each `disable: true`."""
    node = setting() if node is None else node
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "disable" and value is True:
                yield path, value
            elif isinstance(value, list) and value:
                yield (*path, key), value
            else:
                yield from exclusions(value, (*path, key))


def key_lines() -> dict[tuple[str, ...], int]:
    """The line (0-based) of every mapping key of .dmtlint.yaml, by its path."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[(*path, key.value)] = key.start_mark.line
                walk(value, (*path, key.value))

    root = yaml.compose(DMTLINT.read_text())
    assert root is not None, ".dmtlint.yaml is empty"
    walk(root, ())
    return lines


def test_every_exclusion_says_why() -> None:
    text = DMTLINT.read_text().splitlines()
    lines = key_lines()
    found = list(exclusions())
    assert found, ".dmtlint.yaml excludes nothing: then delete this test's subject instead"
    for path, _ in found:
        line = lines[("linters-settings", *path)]
        above = [t.strip() for t in text[:line] if t.strip()]
        # The comment sits on the key's line or right above it.
        commented = "#" in text[line] or bool(above and above[-1].startswith("#"))
        assert commented, f"{'.'.join(path)}: explain the exclusion in a comment right above it"


# --- Is each exclusion still needed? -----------------------------------------------------------


def rendered_container(kind: str, name: str, container: str) -> list[dict[str, Any]]:
    """The container in every value set that renders the workload."""
    found = []
    for rendered in RENDERED.values():
        workload = rendered.find(kind, name)
        if workload is not None:
            found += [c for c in containers(workload) if c["name"] == container]
    return found


def escalates(c: dict[str, Any]) -> bool:
    return (c.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False


def writable_root(c: dict[str, Any]) -> bool:
    return (c.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True


def low_port(c: dict[str, Any]) -> bool:
    return any(p["containerPort"] <= 1024 for p in c.get("ports") or [])


def sys_without_cgroup(c: dict[str, Any]) -> bool:
    mounts = {m["mountPath"].rstrip("/") for m in c.get("volumeMounts") or []}
    return "/sys" in mounts and "/sys/fs/cgroup" not in mounts


CONTAINER_RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "no-new-privileges": escalates,
    "read-only-root-filesystem": writable_root,
    "ports": low_port,
    "sys-cgroup-mount": sys_without_cgroup,
    "liveness-probe": lambda c: "livenessProbe" not in c,
    "readiness-probe": lambda c: "readinessProbe" not in c,
}


def container_exclusion_needed(rule: str, item: dict[str, str]) -> str | None:
    violates = CONTAINER_RULES.get(rule)
    if violates is None:
        return f"container.{rule}: teach this test how to tell that the exclusion is needed"
    found = rendered_container(item["kind"], item["name"], item.get("container", ""))
    if not found:
        return f"container.{rule}: {item} is not rendered by any value set"
    if not all(violates(c) for c in found):
        return f"container.{rule}: {item} follows the rule now, drop the exclusion"
    return None


def enum_exclusion_needed(key: str) -> str | None:
    for path in openapi_files():
        for document in documents(path):
            for found, value in key_paths(document):
                if found == f"{key}.enum" and any(enum_problem(v) for v in value if isinstance(v, str)):
                    return None
    return f"openapi.enum: {key} has no enum that breaks the rule, drop the exclusion"


def monitoring_exclusion_needed(rule: str) -> str | None:
    folder, include = {
        "prometheus-rules": ("prometheus-rules", 'include "helm_lib_prometheus_rules'),
        "grafana-dashboards": ("grafana-dashboards", 'include "helm_lib_grafana_dashboard_definitions'),
    }[rule]
    monitoring = (ROOT / "templates" / "monitoring.yaml").read_text().replace(" ", "")
    if (ROOT / "monitoring" / folder).is_dir() and include.replace(" ", "") not in monitoring:
        return None
    return f"templates.{rule}: monitoring.yaml includes the lib-helm template now, drop the exclusion"


def license_exclusion_needed(prefix: str, exact: bool) -> str | None:
    """A license exclusion must cover a file that fails the rule, or a git-ignored build output
    (a fresh checkout does not have it; a developer's tree does)."""
    candidates = (
        [prefix] if exact else [str(p.relative_to(ROOT)) for p in ROOT.glob(f"{prefix}**/*") if p.is_file()]
    )
    if any(dmt_selects(name) and not check_file(ROOT / name).valid for name in candidates):
        return None
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    if not candidates and f"/{prefix}" in ignored:
        return None
    return f"module.license: {prefix} holds no file that fails the rule, drop the exclusion"


def pdb_exclusion_needed(item: dict[str, str]) -> str | None:
    """Needed while some value set renders the workload and no budget selects its pods."""
    for rendered in RENDERED.values():
        workload = rendered.find(item["kind"], item["name"])
        if workload is None:
            continue
        labels = workload["spec"]["template"]["metadata"]["labels"]
        budgets = rendered.of_kind("PodDisruptionBudget")
        if not any(
            all(labels.get(k) == v for k, v in b["spec"]["selector"]["matchLabels"].items()) for b in budgets
        ):
            return None
        return f"templates.pdb: {item} has a PodDisruptionBudget now, drop the exclusion"
    return f"templates.pdb: {item} is not rendered by any value set"


def problem_of(path: tuple[str, ...], value: Any) -> list[str | None]:
    linter, *rest = path
    if linter == "container" and rest[0] == "exclude-rules":
        return [container_exclusion_needed(rest[1], item) for item in value]
    if linter == "openapi" and rest == ["exclude-rules", "enum"]:
        return [enum_exclusion_needed(key) for key in value]
    if linter == "templates" and rest in (["prometheus-rules"], ["grafana-dashboards"]):
        return [monitoring_exclusion_needed(rest[0])]
    if linter == "templates" and rest == ["exclude-rules", "pdb"]:
        return [pdb_exclusion_needed(item) for item in value]
    if linter == "module" and rest[:2] == ["exclude-rules", "license"]:
        return [license_exclusion_needed(p, exact=rest[2] == "files") for p in value]
    return [f"{'.'.join(path)}: teach this test how to tell that the exclusion is needed"]


def test_every_exclusion_is_still_needed() -> None:
    problems = [p for path, value in exclusions() for p in problem_of(path, value) if p]
    assert not problems, problems


def test_an_exclusion_of_a_rule_that_holds_is_reported() -> None:
    # The checks above must tell a needless exclusion: these rules hold for these objects.
    followed = [
        (
            ("container", "exclude-rules", "no-new-privileges"),
            [{"kind": "DaemonSet", "name": "gpu-node-agent", "container": "gpu-node-agent"}],
        ),
        (
            ("container", "exclude-rules", "ports"),
            [{"kind": "Deployment", "name": "gpu-controller", "container": "gpu-controller"}],
        ),
        (("openapi", "exclude-rules", "enum"), ["properties.logLevel"]),
        (("module", "exclude-rules", "license", "files"), ["tools/add-license-headers"]),
        (("rbac", "exclude-rules", "placement"), [{"kind": "Role", "name": "gpu-controller"}]),
        (("templates", "exclude-rules", "pdb"), [{"kind": "Deployment", "name": "gpu-controller"}]),
    ]
    for path, value in followed:
        assert all(problem_of(path, value)), path
