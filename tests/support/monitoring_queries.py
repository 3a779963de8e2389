# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every PromQL expression the module ships: the alert rules (as Prometheus loads them) and the
queries of the committed dashboards, with Grafana's variables filled in as a dashboard would."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.prometheus_rules import ROOT, as_prometheus_loads, rule_files
from tests.support.promql_names import metric_names, variable_metric

DASHBOARDS = ROOT / "monitoring" / "grafana-dashboards"
# What Grafana puts for $__rate_interval; wide enough to cover the whole of a short test.
RATE_INTERVAL = "1m"


@dataclass(frozen=True)
class Expression:
    where: str  # "dcgm.yaml: D8GPUXidError", "gpu-node.json: GPU utilization [A]"
    expr: str


def alert_expressions() -> list[Expression]:
    return [
        Expression(f"{path.name}: {rule['alert']}", str(rule["expr"]))
        for path in rule_files()
        for group in yaml.safe_load(as_prometheus_loads(path))["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def recording_expressions() -> list[Expression]:
    """The recording rules: ``where`` names the series each one records."""
    return [
        Expression(f"{path.name}: {rule['record']}", str(rule["expr"]))
        for path in rule_files()
        for group in yaml.safe_load(as_prometheus_loads(path))["groups"]
        for rule in group["rules"]
        if "record" in rule
    ]


def recorded_names() -> set[str]:
    return {e.where.split(": ", 1)[1] for e in recording_expressions()}


def dashboards() -> list[Path]:
    return sorted(DASHBOARDS.glob("*/*.json"))


def _panels(dashboard: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for panel in dashboard.get("panels") or ():
        yield from panel.get("panels") or () if panel.get("type") == "row" else (panel,)


def panel_expressions(variables: Mapping[str, str] | None = None) -> list[Expression]:
    """Each target of each panel; ``variables`` fills ``$name`` (``$__rate_interval`` always)."""
    values = {"__rate_interval": RATE_INTERVAL, **(variables or {})}
    found = []
    for path in dashboards():
        dashboard = json.loads(path.read_text())
        for panel in _panels(dashboard):
            for target in panel.get("targets") or ():
                expr = str(target["expr"])
                for name in sorted(values, key=len, reverse=True):
                    expr = expr.replace(f"${{{name}}}", values[name]).replace(f"${name}", values[name])
                found.append(Expression(f"{path.name}: {panel['title']} [{target['refId']}]", expr))
    return found


def variable_queries() -> list[Expression]:
    return [
        Expression(f"{path.name}: ${variable['name']}", str(variable["query"]))
        for path in dashboards()
        for variable in json.loads(path.read_text())["templating"]["list"]
        if variable["type"] == "query"
    ]


def unexported(
    expressions: Iterable[Expression], exported: set[str], variables: Iterable[Expression] = ()
) -> list[str]:
    """``where: name`` for every metric an expression or variable reads that nothing exports."""
    missing = [f"{e.where}: {name}" for e in expressions for name in sorted(metric_names(e.expr) - exported)]
    missing += [
        f"{v.where}: {variable_metric(v.expr)}" for v in variables if variable_metric(v.expr) not in exported
    ]
    return missing


def finite_values(result: list[dict[str, Any]]) -> list[float]:
    """The finite sample values of an instant query's result (histogram_quantile over no
    observations gives NaN, which is no data)."""
    values = []
    for series in result:
        samples = series.get("values") or [series["value"]]
        values += [float(v) for _, v in samples if math.isfinite(float(v))]
    return values
