# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What every dashboard of the module shares, following Deckhouse's dashboard rules: the
``ds_prometheus`` datasource variable used by every panel and query, read-only dashboards with a
stable uid, ``timeseries`` (never ``graph``) panels, ``$__rate_interval`` in rates, no panel alerts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    DataTransformerConfig,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${ds_prometheus}")
REF_IDS = "ABCDEFGH"
# Table panels show the labels of an instant query; its timestamp says nothing.
HIDE_TIME = DataTransformerConfig(id_val="organize", options={"excludeByName": {"Time": True}})


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


def _target(query: Query, ref_id: str, *, instant: bool) -> prometheus.Dataquery:
    target = prometheus.Dataquery().expr(query.expr).datasource(DATASOURCE).ref_id(ref_id)
    if query.legend:
        target = target.legend_format(query.legend)
    if instant:
        return target.instant().format(PromQueryFormat.TABLE)
    return target.range()


def _targets(queries: tuple[Query, ...], *, instant: bool = False) -> list[Any]:
    if not 0 < len(queries) <= len(REF_IDS):
        raise ValueError(f"a panel has 1 to {len(REF_IDS)} queries, not {len(queries)}")
    return [_target(q, REF_IDS[i], instant=instant) for i, q in enumerate(queries)]


def timeseries_panel(title: str, description: str, unit: str, *queries: Query) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .targets(_targets(queries))
        .fill_opacity(10)
        .line_width(1)
        .height(8)
        .span(12)
    )


def stat_panel(title: str, description: str, unit: str, query: Query) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .targets(_targets((query,)))
        .height(4)
        .span(4)
    )


def table_panel(title: str, description: str, query: Query, width: int = 12) -> table.Panel:
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(_targets((query,), instant=True))
        .with_transformation(HIDE_TIME)
        .height(8)
        .span(width)
    )


def node_variable(source: str) -> dashboard.QueryVariable:
    """One node to look at, from the nodes a metric names."""
    return (
        dashboard.QueryVariable("node")
        .label("Node")
        .datasource(DATASOURCE)
        .query(f"label_values({source}, node)")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
    )


@dataclass
class Board:
    """A dashboard being laid out: panels get ids in the order they are added."""

    uid: str
    title: str
    description: str
    variables: list[dashboard.QueryVariable] = field(default_factory=list)
    _builder: dashboard.Dashboard | None = field(default=None, init=False)
    _next_id: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        self._builder = (
            dashboard.Dashboard(self.title)
            .uid(self.uid)
            .description(self.description)
            .tags(["gpu", "main"])
            .readonly()
            .time("now-3h", "now")
            .refresh("30s")
            .tooltip(DashboardCursorSync.CROSSHAIR)
            .with_variable(
                dashboard.DatasourceVariable("ds_prometheus").label("Prometheus").type("prometheus")
            )
        )
        for variable in self.variables:
            self._builder = self._builder.with_variable(variable)

    @property
    def builder(self) -> dashboard.Dashboard:
        assert self._builder is not None
        return self._builder

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def row(self, title: str) -> Board:
        self._builder = self.builder.with_row(dashboard.Row(title).id(self._take_id()))
        return self

    def add(self, *panels: timeseries.Panel | stat.Panel | table.Panel) -> Board:
        for panel in panels:
            self._builder = self.builder.with_panel(panel.id(self._take_id()))
        return self

    def to_json(self) -> str:
        model: dict[str, Any] = json.loads(json.dumps(self.builder.build(), cls=JSONEncoder))
        model["id"] = None  # Grafana assigns it; a definition never carries one
        return json.dumps(model, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
