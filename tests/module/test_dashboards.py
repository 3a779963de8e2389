# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Grafana dashboards: the committed JSON is exactly what tools/gen-dashboards makes, it follows
Deckhouse's dashboard rules (the checks of dmt's grafana-dashboards rule, which .dmtlint.yaml turns
off for the template include, plus the module's own), and the chart ships every file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.helm_chart import MONITORING_APIS, render
from tests.support.module_values import module_values
from tools.dashboards import render as generator

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_DIR = ROOT / "monitoring" / "grafana-dashboards"
COMMITTED = sorted(DASHBOARD_DIR.glob("*/*.json"))
DATASOURCE_UIDS = {"$ds_prometheus", "${ds_prometheus}"}
RANGE_FUNCTION = re.compile(r"\b(rate|irate|increase|delta|deriv|changes|\w+_over_time)\(")


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel but the rows, in a row or not."""
    found: list[dict[str, Any]] = []
    for panel in dashboard.get("panels") or ():
        found += panel.get("panels") or [] if panel.get("type") == "row" else [panel]
    return found


def test_the_committed_dashboards_are_what_the_generator_makes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen-dashboards"), "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    made = {str(p.relative_to(tmp_path)): p.read_text() for p in sorted(tmp_path.rglob("*.json"))}
    committed = {str(p.relative_to(DASHBOARD_DIR)): p.read_text() for p in COMMITTED}
    assert sorted(made) == sorted(generator.DASHBOARDS)
    stale = sorted(name for name in made.keys() | committed.keys() if made.get(name) != committed.get(name))
    assert stale == [], f"run tools/gen-dashboards and commit the result: {stale}"


def test_the_generator_is_deterministic() -> None:
    assert generator.render() == generator.render()


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_dashboard_follows_the_deckhouse_rules(path: Path) -> None:
    dashboard = load(path)
    assert dashboard["editable"] is False
    assert dashboard["id"] is None
    assert dashboard["uid"].startswith("d8-gpu-")
    variables = dashboard["templating"]["list"]
    assert variables[0] == {
        **variables[0],
        "name": "ds_prometheus",
        "type": "datasource",
        "query": "prometheus",
    }
    for variable in variables[1:]:
        assert variable["type"] == "query"
        assert variable["datasource"]["uid"] in DATASOURCE_UIDS
    found = panels(dashboard)
    assert found
    rows = [p for p in dashboard["panels"] if p["type"] == "row"]
    ids = [p["id"] for p in rows + found]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    titles = [p["title"] for p in found]
    assert len(titles) == len(set(titles)), "panel titles are unique: the documentation names panels by title"
    for panel in found:
        where = f"{path.name}: {panel['title']}"
        assert panel["type"] in {"timeseries", "stat", "table"}, where  # no graph, no statusmap
        assert "alert" not in panel, where
        assert panel["description"], where
        assert panel["datasource"]["uid"] in DATASOURCE_UIDS, where
        assert panel["targets"], where
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${ds_prometheus}"}, where
            expr = target["expr"]
            assert not any(old in expr for old in ("interval_rv", "interval_sx3", "interval_sx4")), where
            for match in RANGE_FUNCTION.finditer(expr):
                window = expr[match.end() :].split("[", 1)[1].split("]", 1)[0]
                assert window == "$__rate_interval", f"{where}: {match.group(1)} over [{window}]"


def test_every_dashboard_is_shipped_by_the_chart() -> None:
    rendered = render(module_values(), api_versions=MONITORING_APIS)
    definitions = {d["metadata"]["name"]: d for d in rendered.of_kind("GrafanaDashboardDefinition")}
    assert sorted(definitions) == sorted(
        f"d8-gpu-{p.parent.name}-{p.stem}".replace("_", "-") for p in COMMITTED
    )
    for path in COMMITTED:
        definition = definitions[f"d8-gpu-{path.parent.name}-{path.stem}"]
        assert definition["spec"]["folder"] == path.parent.name.title()
        assert json.loads(definition["spec"]["definition"]) == load(path)
