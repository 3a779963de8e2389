# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The metric names read out of PromQL expressions: what the check of the rules and dashboards
against a real Prometheus (test_monitoring_prometheus.py) relies on to fail on unknown metrics."""

from __future__ import annotations

import pytest

from tests.support.promql_names import metric_names, variable_metric


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('up{job="gpu-controller", namespace="d8-gpu"} == 0', {"up"}),
        ('absent(up{job="x"} == 1)', {"up"}),
        (
            "sum by (result) (rate(d8_gpu_controller_reconciles_total[$__rate_interval]))",
            {"d8_gpu_controller_reconciles_total"},
        ),
        (
            "histogram_quantile(0.95, sum by (le) (rate(d8_gpu_claim_allocation_seconds_bucket[5m])))",
            {"d8_gpu_claim_allocation_seconds_bucket"},
        ),
        (
            "(max by (physicalgpu, node) (a) == 0) and on (physicalgpu, node) (max without (x) (b) == 1)",
            {"a", "b"},
        ),
        ("count(DCGM_FI_DEV_XID_ERRORS > 0) or vector(0)", {"DCGM_FI_DEV_XID_ERRORS"}),
        ('DCGM_FI_DEV_SM_CLOCK{node="$node", GPU_I_PROFILE=""} * 1e6 + 0x1F', {"DCGM_FI_DEV_SM_CLOCK"}),
        ("x offset 5m / y offset $__interval unless z", {"x", "y", "z"}),
        ('label_replace(a, "dst", "$1", "src", "(sum|rate).*")', {"a"}),
        ("a * on (node) group_left (model) b", {"a", "b"}),
        ("increase(a[10m]) > 0 and changes(b[1h:1m]) > bool 2", {"a", "b"}),
    ],
)
def test_the_names_an_expression_reads(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_selector_by_name_is_refused() -> None:
    with pytest.raises(ValueError, match="__name__"):
        metric_names('{__name__=~"d8_.*"}')


def test_the_metric_of_a_variable_query() -> None:
    assert variable_metric("label_values(d8_gpu_physicalgpus, node)") == "d8_gpu_physicalgpus"
    assert variable_metric('label_values(up{job="x"}, instance)') == "up"
    with pytest.raises(ValueError, match="label_values"):
        variable_metric("query_result(up)")
