# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The alert rules and dashboards against a real Prometheus (the distribution's server, fetched by
tools/fetch-promtool) that scrapes the real gpu-controller and gpu-dra-controller processes and
dcgm-exporter stand-ins for a small cluster (tests/support/monitoring_world.py).

Prometheus loads the rule files and evaluates every rule without error; every alert and recording
expression and every dashboard query parses; every metric they name is exported by a component or
by dcgm-exporter; every dashboard query returns data; the alerts that this cluster deserves go
pending, with the labels the real series carry; and the joins of DCGM's figures with gpu-handler's
prepared-device info give each whole card, MIG instance and share to the Pod that holds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from deckhouse_gpu.domain.prepare.attribution_series import dcgm_bus_id
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS
from testkit.gpu_cluster import GpuCluster
from testkit.waiting import wait_for
from tests.support import monitoring_world, node_metrics_world
from tests.support.monitoring_queries import (
    Expression,
    alert_expressions,
    finite_values,
    panel_expressions,
    recording_expressions,
    unexported,
    variable_queries,
)
from tests.support.prometheus_rules import as_prometheus_loads, rule_files
from tests.support.prometheus_server import ApiError, PrometheusServer

NODES = {"h100", "a100", "a30", "t4"}
NODE_SHOWN = "h100"  # the node dashboard is checked for the node with MIG instances and allocations
TIMEOUT = 40.0


@dataclass
class Observed:
    prometheus: PrometheusServer
    cluster: GpuCluster
    workdir: Path

    def logs(self) -> str:
        parts = [f"--- prometheus\n{self.prometheus.log()}"]
        for path in sorted(self.workdir.glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def has_data(self, expr: str) -> bool:
        try:
            return bool(finite_values(self.prometheus.query(expr)))
        except ApiError:
            return False


def _driver_ready(cluster: GpuCluster, name: str) -> str | None:
    conditions = (cluster.kube.get(PHYSICAL_GPUS, name).get("status") or {}).get("conditions") or []
    return next((str(c["status"]) for c in conditions if c["type"] == "DriverReady"), None)


def _settle(seen: Observed, targets: int) -> None:
    """Until Prometheus scrapes everything, then the churn of monitoring_world, until Prometheus
    has seen gpu-controller's passes and gpu-dra-controller's allocation happen."""
    cluster = seen.cluster
    wait_for(lambda: seen.has_data(f"count(up == 1) == {targets}"), TIMEOUT, "every target up")
    wait_for(lambda: seen.has_data("d8_gpu_allocated_devices"), TIMEOUT, "allocation metrics")
    wait_for(lambda: _driver_ready(cluster, "t4-0000-10-00-0") == "Unknown", TIMEOUT, "t4 judged")
    monitoring_world.churn(cluster)
    wait_for(lambda: _driver_ready(cluster, "a30-0000-10-00-0") == "False", TIMEOUT, "a30 not ready")
    monitoring_world.recover(cluster)
    wait_for(lambda: _driver_ready(cluster, "a30-0000-10-00-0") == "True", TIMEOUT, "a30 ready")
    claim = lambda: cluster.kube.get(RESOURCE_CLAIMS, "infer", namespace="ml")  # noqa: E731
    wait_for(lambda: (claim().get("status") or {}).get("allocation"), TIMEOUT, "claim allocated")
    for expr in (
        "increase(d8_gpu_controller_reconciles_total[1m]) > 0",
        "increase(d8_gpu_claim_allocation_seconds_count[1m]) > 0",
    ):
        wait_for(lambda e=expr: seen.has_data(e), TIMEOUT, f"Prometheus saw {expr}")  # type: ignore[misc]


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    workdir = tmp_path_factory.mktemp("monitoring")
    cluster = monitoring_world.build()
    rules = {f"{path.stem}.yaml": as_prometheus_loads(path) for path in rule_files()}
    with (
        monitoring_world.running(cluster, workdir) as targets,
        PrometheusServer(workdir / "prometheus", targets, rules) as prometheus,
    ):
        seen = Observed(prometheus, cluster, workdir)
        try:
            _settle(seen, len(targets))
        except BaseException:
            print(seen.logs())  # pytest shows it with the failure
            raise
        yield seen


def test_prometheus_loads_every_rule_and_evaluates_it_without_error(observed: Observed) -> None:
    wanted = {e.where.split(": ", 1)[1] for e in alert_expressions() + recording_expressions()}

    def rules() -> dict[str, dict[str, object]]:
        groups = observed.prometheus.api("rules")["groups"]
        return {r["name"]: r for g in groups for r in g["rules"]}

    wait_for(lambda: all(r["health"] != "unknown" for r in rules().values()), TIMEOUT, "every rule evaluated")
    loaded = rules()
    assert set(loaded) == wanted
    assert {name: r.get("lastError") for name, r in loaded.items() if r["health"] != "ok"} == {}


@pytest.mark.parametrize("expression", alert_expressions() + recording_expressions(), ids=lambda e: e.where)
def test_every_rule_expression_parses_and_evaluates(observed: Observed, expression: Expression) -> None:
    observed.prometheus.query(expression.expr)  # raises with Prometheus' message when it does not parse


def test_every_metric_the_rules_and_dashboards_name_is_exported(observed: Observed) -> None:
    exported = observed.prometheus.names()
    expressions = alert_expressions() + recording_expressions() + panel_expressions({"node": NODE_SHOWN})
    assert unexported(expressions, exported, variable_queries()) == []


def test_a_metric_nobody_exports_fails_the_check(observed: Observed) -> None:
    made_up = Expression(
        "prepare.yaml: D8GPUPrepareStuck", "rate(d8_gpu_handler_prepares_stuck_total[5m]) > 0"
    )
    variable = Expression("gpu-node.json: $card", "label_values(d8_gpu_card_info, card)")
    assert unexported([made_up], observed.prometheus.names(), [variable]) == [
        "prepare.yaml: D8GPUPrepareStuck: d8_gpu_handler_prepares_stuck_total",
        "gpu-node.json: $card: d8_gpu_card_info",
    ]


def test_every_family_of_the_node_components_is_scraped(observed: Observed) -> None:
    """So that a rule or a panel on any of gpu-handler's or gpu-node-agent's metrics is checked."""
    defined = {
        family.name + {"counter": "_total", "histogram": "_count"}.get(family.type, "")
        for registry in (HandlerMetrics().registry, NodeAgentMetrics().registry)
        for family in registry.collect()
        if not family.name.startswith("process_")
    }
    assert defined - set(observed.prometheus.names()) == set()


def test_the_node_variable_lists_every_node(observed: Observed) -> None:
    (variable,) = variable_queries()
    assert set(observed.prometheus.label_values("node", "d8_gpu_physicalgpus")) == NODES, variable


@pytest.mark.parametrize("expression", panel_expressions({"node": NODE_SHOWN}), ids=lambda e: e.where)
def test_every_dashboard_query_returns_data(observed: Observed, expression: Expression) -> None:
    result = observed.prometheus.query(expression.expr)
    assert finite_values(result), f"{expression.expr} returned {result}"


def test_the_alerts_this_cluster_deserves_are_pending(observed: Observed) -> None:
    def active() -> set[tuple[str, str]]:
        alerts = observed.prometheus.api("alerts")["alerts"]
        return {
            (a["labels"]["alertname"], a["labels"].get("physicalgpu") or a["labels"].get("node", ""))
            for a in alerts
        }

    expected = {
        ("D8GPUCardUnhealthy", monitoring_world.UNHEALTHY_CARD),
        ("D8GPUDriverNotReady", "t4"),
        ("D8GPUAllocatedGPUIdle", "h100"),  # ml/big's card, at IDLE_UTILIZATION
        # Not D8GPUPrepareErrors: h100's refused claim was counted before Prometheus' first scrape,
        # so no increase is seen (a lasting failure keeps counting and is).
    }
    deadline = time.monotonic() + TIMEOUT
    while active() != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert active() == expected


def _panel(title: str) -> Expression:
    (found,) = [e for e in panel_expressions({"node": NODE_SHOWN}) if e.where.split(": ", 1)[1] == title]
    return found


@pytest.mark.parametrize(
    ("title", "label", "expected"),
    [
        ("GPUs [A]", "", {"": 6.0}),
        ("Usable GPUs [A]", "", {"": 4.0}),  # not the card NVML lost, not the card of node t4
        ("GPUs not ready or not healthy [A]", "", {"": 2.0}),
        # ml/small's two instances and the one whose destroy failed (node_metrics_world)
        ("MIG instances by profile [A]", "GPU_I_PROFILE", {"1g.10gb": 3.0}),
        ("Allocated devices by mode [A]", "mode", {"Physical": 2.0, "MIG": 2.0, "Shared": 2.0}),
        ("Shares by node [A]", "node", {"a100": 2.0}),
    ],
)
def test_the_cluster_dashboard_shows_this_cluster(
    observed: Observed, title: str, label: str, expected: dict[str, float]
) -> None:
    result = observed.prometheus.query(_panel(title).expr)
    assert {series["metric"].get(label, ""): float(series["value"][1]) for series in result} == expected


def _values(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(s["metric"].get(label, "") for label in labels): float(s["value"][1]) for s in result}


def _recorded(observed: Observed, expr: str) -> list[dict[str, Any]]:
    wait_for(lambda: observed.has_data(expr), TIMEOUT, f"Prometheus recorded {expr}")
    return observed.prometheus.query(expr)


def test_a_whole_card_and_two_shares_of_one_card_go_to_their_pods(observed: Observed) -> None:
    result = _recorded(observed, "pod:d8_gpu_device_utilization_percent:max")
    idle_card = dcgm_bus_id(monitoring_world.IDLE_CARD[1])
    shared_card = dcgm_bus_id(node_metrics_world.addresses(1)[0])
    assert _values(
        result, "node", "namespace", "pod", "claim", "offer_type", "pci_bus_id", "share_percent"
    ) == {
        ("h100", "ml", "big", "big", "Physical", idle_card, ""): monitoring_world.IDLE_UTILIZATION,
        (
            "a100",
            "ml",
            "notebook",
            "notebook",
            "Shared",
            shared_card,
            "25",
        ): monitoring_world.SHARED_UTILIZATION,
        ("a100", "lab", "lab", "lab", "Shared", shared_card, "50"): monitoring_world.SHARED_UTILIZATION,
    }
    # The card's own memory and power, to the whole card's Pod only.
    for rule, field in (
        ("pod:d8_gpu_device_memory_used_bytes:max", "DCGM_FI_DEV_FB_USED"),
        ("pod:d8_gpu_device_power_watts:max", "DCGM_FI_DEV_POWER_USAGE"),
    ):
        (card,) = observed.prometheus.query(f'{field}{{node="h100", pci_bus_id="{idle_card}", GPU_I_ID=""}}')
        scale = 1048576 if field == "DCGM_FI_DEV_FB_USED" else 1
        whole = _values(_recorded(observed, f'{rule}{{offer_type="Physical"}}'), "pod")
        assert whole == {("big",): float(card["value"][1]) * scale}, rule
    assert observed.prometheus.query('pod:d8_gpu_device_memory_used_bytes:max{offer_type="Shared"}') == []


def test_each_mig_instance_goes_to_the_pod_of_its_claim(observed: Observed) -> None:
    dcgm = observed.prometheus.query('DCGM_FI_DEV_FB_USED{node="h100", GPU_I_ID!=""}')
    instances = {(s["metric"]["pci_bus_id"], s["metric"]["GPU_I_ID"]): float(s["value"][1]) for s in dcgm}
    rule = _recorded(observed, 'pod:d8_gpu_device_memory_used_bytes:max{node="h100", offer_type="MIG"}')
    found = {(s["metric"]["pci_bus_id"], s["metric"]["GPU_I_ID"]): s for s in rule}
    assert set(found) == set(instances)  # every instance DCGM reports is some claim's, once
    first, third = (dcgm_bus_id(a) for a in node_metrics_world.addresses(3)[::2])
    owners = {key: (s["metric"]["claim"], s["metric"].get("pod", "")) for key, s in found.items()}
    assert sorted(owners.values()) == [("small", "train"), ("small", "train"), ("stuck", "")]
    assert {key[0] for key, owner in owners.items() if owner[0] == "small"} == {first}
    assert {key[0] for key, owner in owners.items() if owner[0] == "stuck"} == {third}
    for key, series in found.items():  # each its own instance's memory, not its neighbour's
        assert float(series["value"][1]) == instances[key] * 1048576
        assert series["metric"]["GPU_I_PROFILE"] == "1g.10gb"


def test_per_namespace_figures_count_each_card_once(observed: Observed) -> None:
    result = _recorded(observed, "namespace:d8_gpu_utilization_percent:avg")
    idle, shared = monitoring_world.IDLE_UTILIZATION, monitoring_world.SHARED_UTILIZATION
    assert _values(result, "namespace") == {("ml",): (idle + shared) / 2, ("lab",): shared}
