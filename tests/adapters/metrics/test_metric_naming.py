# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every metric family of every component follows Prometheus' naming rules and keeps its series
bounded: the module's prefix, ``_total`` on counters only, base units (seconds, bytes), a unit on
every histogram, and no label that would grow with workloads (claim, pod or UID)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from deckhouse_gpu.adapters.metrics.controller_metrics import ControllerMetrics
from deckhouse_gpu.adapters.metrics.dra_metrics import DraMetrics
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from deckhouse_gpu.domain.inventory.other_owner import OWNER_REASONS
from deckhouse_gpu.domain.metric_labels import API_ERRORS, MIG_OPERATIONS, NVML_ERRORS, NVML_QUERIES, OTHER
from deckhouse_gpu.domain.prepare.metrics import OFFER_TYPES, REASONS
from tests.conftest import FixedClock
from tests.support.controller_objects import card


def _registries() -> dict[str, CollectorRegistry]:
    cards = [card("w1-gpu-0", "w1")]
    handler, agent = HandlerMetrics(), NodeAgentMetrics()
    # Every labelled family of the node components with one series, so its labels can be read.
    handler.observe_prepare("Physical", 0.1, "mig")
    handler.observe_unprepare("MIG", 0.1, "files")
    handler.observe_mig("create_instance", False)
    handler.observe_nvml_error("snapshot", "NVMLQueryFailed")
    handler.observe_api_write("ResourceSlice", "Conflict")
    agent.observe_api_write("PhysicalGPU", "Unavailable")
    return {
        "gpu-controller": ControllerMetrics(lambda: cards, lambda: True).registry,
        "gpu-dra-controller": DraMetrics(lambda: [], lambda: [], lambda: True, FixedClock()).registry,
        "gpu-handler": handler.registry,
        "gpu-node-agent": agent.registry,
    }


def _families() -> Iterator[tuple[str, Metric]]:
    for component, registry in _registries().items():
        for family in registry.collect():
            if not family.name.startswith("process_"):  # prometheus_client's standard ones
                yield component, family


FAMILIES = list(_families())
NAME = re.compile(r"^d8_gpu_[a-z][a-z0-9_]*[a-z0-9]$")
# Units Prometheus wants as base units, and words that mark a non-base unit.
NON_BASE_UNITS = re.compile(
    r"_(milliseconds|microseconds|nanoseconds|minutes|hours|ms|us|kb|mb|gb|kib|mib|gib|kilobytes|megabytes|percent)(_|$)"
)
UNBOUNDED_LABELS = {"claim", "claim_uid", "uid", "pod", "pod_name", "namespace", "name", "message"}
OWN_PREFIXES = {
    "gpu-controller": ("d8_gpu_controller_", "d8_gpu_physicalgpu"),
    "gpu-dra-controller": ("d8_gpu_dra_controller_", "d8_gpu_allocat", "d8_gpu_claim_"),
    "gpu-handler": ("d8_gpu_handler_",),
    "gpu-node-agent": ("d8_gpu_node_agent_",),
}


def _id(item: tuple[str, Metric]) -> str:
    return f"{item[0]}:{item[1].name}"


@pytest.mark.parametrize("item", FAMILIES, ids=_id)
def test_names_follow_the_prometheus_rules(item: tuple[str, Metric]) -> None:
    component, family = item
    assert NAME.match(family.name), family.name
    assert family.name.startswith(OWN_PREFIXES[component]), f"{family.name} is not named after {component}"
    assert not NON_BASE_UNITS.search(family.name), f"{family.name}: use base units (seconds, bytes, ratios)"
    assert not family.name.endswith("_total"), "prometheus_client adds _total to counters, and only to them"
    # _created: the creation time prometheus_client adds unless told not to (the components are)
    names = {sample.name for sample in family.samples if not sample.name.endswith("_created")}
    if family.type == "counter":
        assert names <= {f"{family.name}_total"}, names
    else:
        assert not any(name.endswith("_total") for name in names), f"a {family.type} named like a counter"
    if family.type == "histogram":
        assert family.name.endswith(("_seconds", "_bytes")), f"{family.name}: a histogram needs its unit"
    assert family.documentation.strip(), f"{family.name} has no help text"


# Whose point is to name the workload of each prepared device: bounded by the node's devices times
# the Pods kept per claim (domain/prepare/attribution.py), never by how many claims came and went.
WORKLOAD_INFO = {"d8_gpu_handler_prepared_device_info"}


@pytest.mark.parametrize("item", FAMILIES, ids=_id)
def test_no_label_grows_with_workloads(item: tuple[str, Metric]) -> None:
    _, family = item
    labels = {key for sample in family.samples for key in sample.labels if key not in ("le", "quantile")}
    if family.name in WORKLOAD_INFO:
        return
    assert not labels & UNBOUNDED_LABELS, f"{family.name}: {labels & UNBOUNDED_LABELS}"


def test_the_node_components_export_no_node_label_of_their_own() -> None:
    """Prometheus adds it from the pod (the PodMonitor): a label of our own would clash."""
    for component, family in FAMILIES:
        if component in ("gpu-handler", "gpu-node-agent"):
            assert all("node" not in sample.labels for sample in family.samples), family.name


# Every label value a node component can export comes from one of these lists.
BOUNDED_VALUES = {
    "offer_type": set(OFFER_TYPES),
    # prepare's failure reasons, and why another owner holds a card (DESIGN.md D16)
    "reason": {*REASONS, *OWNER_REASONS},
    "operation": {*MIG_OPERATIONS, OTHER},
    "query": {*NVML_QUERIES, OTHER},
    "error": {*NVML_ERRORS, *API_ERRORS, OTHER},
}


def test_label_values_of_the_node_components_come_from_fixed_lists() -> None:
    handler = HandlerMetrics()
    handler.observe_mig("a-new-nvml-call", False)
    handler.observe_nvml_error("nvmlDeviceGetFoo", "TypeError")
    handler.observe_api_write("ResourceSlice", "ConnectionResetError")
    for family in handler.registry.collect():
        for sample in family.samples:
            for key, value in sample.labels.items():
                if key in BOUNDED_VALUES:
                    assert value in BOUNDED_VALUES[key], (family.name, key, value)
