# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""docs/MONITORING.md and its Russian twin name every metric the code exports, every alert of the
rule files and every dashboard and panel, and nothing that does not exist."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from deckhouse_gpu.adapters.metrics.controller_metrics import ControllerMetrics
from deckhouse_gpu.adapters.metrics.dra_metrics import DraMetrics
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from tests.support.dcgm_fixture import DEFAULT_COUNTERS
from tests.support.monitoring_queries import alert_expressions, dashboards

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"en": ROOT / "docs" / "MONITORING.md", "ru": ROOT / "docs" / "MONITORING.ru.md"}
HOOK = ROOT / "hooks" / "lib" / "module_status.py"
NAMED = re.compile(r"`((?:d8_gpu_|DCGM_)\w+)`")


class _Clock:
    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return 0.0


def _names(registry: CollectorRegistry) -> set[str]:
    return {
        f"{family.name}_total" if family.type == "counter" else family.name
        for family in registry.collect()
        if not family.name.startswith("process_")
    }


def exported() -> set[str]:
    """Every d8_gpu_* family the components' registries hold, every hook series, every DCGM default."""
    controller = ControllerMetrics(lambda: [], lambda: True).registry
    dra = DraMetrics(lambda: [], lambda: [], lambda: True, _Clock()).registry
    hooks = set(re.findall(r'"name": "(d8_gpu_module_\w+)"', HOOK.read_text()))
    nodes = _names(HandlerMetrics().registry) | _names(NodeAgentMetrics().registry)
    return _names(controller) | _names(dra) | nodes | hooks | {name for name, _, _ in DEFAULT_COUNTERS}


def test_the_code_exports_what_this_test_expects() -> None:
    names = exported()
    assert {"d8_gpu_physicalgpus", "d8_gpu_allocated_devices", "d8_gpu_module_nodes"} <= names
    assert "d8_gpu_controller_reconciles_total" in names  # counters as Prometheus names them
    assert {"d8_gpu_handler_prepare_errors_total", "d8_gpu_node_agent_scans_total"} <= names


@pytest.mark.parametrize("language", DOCS)
def test_the_docs_list_every_metric_and_no_other(language: str) -> None:
    text = DOCS[language].read_text()
    named = set(NAMED.findall(text))
    # Families the docs mention as not served (`DCGM_FI_PROF_*`) end with "_"; one DCGM field is
    # a label of every series.
    named = {n for n in named if not n.endswith("_")} - {"DCGM_FI_DRIVER_VERSION"}
    assert exported() - named == set(), "metrics the docs do not list"
    assert named - exported() == set(), "metrics the docs list that nothing exports"


@pytest.mark.parametrize("language", DOCS)
def test_the_docs_describe_every_alert(language: str) -> None:
    text = DOCS[language].read_text()
    alerts = {e.where.split(": ", 1)[1] for e in alert_expressions()}
    assert {a for a in alerts if f"| `{a}` |" not in text} == set(), "alerts missing from the table"
    assert {a for a in alerts if f"`{a}`" not in text.split("## ", 3)[-1]} == set()
    assert set(re.findall(r"`(D8GPU\w+)`", text)) <= alerts


@pytest.mark.parametrize("language", DOCS)
def test_the_docs_describe_every_dashboard_and_panel(language: str) -> None:
    text = DOCS[language].read_text()
    for path in dashboards():
        dashboard = json.loads(path.read_text())
        section = text.split(f"### {dashboard['title']}\n", 1)
        assert len(section) == 2, f"no section for {dashboard['title']}"
        body = section[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
        titles = [p["title"] for p in dashboard["panels"] if p["type"] != "row"]
        assert [t for t in titles if f"\n| {t} |" not in body] == [], dashboard["title"]
        assert len(re.findall(r"^\| (?!Panel|Панель|---)", body, re.M)) == len(titles), dashboard["title"]
