# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-controller's Prometheus metrics: the inventory collector and the reconcile counters.

The inventory gauges come from a custom collector that reads the current cards at every
scrape instead of gauges set when things change, so nothing stale outlives a deleted card.
Only the leader exports the inventory: every replica has the same caches, and series from
each of them would count every card several times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from deckhouse_gpu.domain.inventory.metrics import card_counts, condition_samples
from deckhouse_gpu.ports.kube import Object

RESULTS = ("success", "error", "skipped")
# Passes read caches and write a few conditions: milliseconds normally, seconds when the API is slow.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Cards = Callable[[], Iterable[Object] | None]  # None: not leading or caches not synced yet


class InventoryCollector(Collector):
    def __init__(self, cards: Cards, is_leader: Callable[[], bool]) -> None:
        self._cards = cards
        self._is_leader = is_leader

    def collect(self) -> Iterator[Metric]:
        leader = GaugeMetricFamily(
            "d8_gpu_controller_is_leader", "1 when this gpu-controller replica holds the lease, else 0"
        )
        leader.add_metric([], 1.0 if self._is_leader() else 0.0)
        yield leader
        cards = self._cards()
        if cards is None:
            return
        cards = list(cards)
        count = GaugeMetricFamily(
            "d8_gpu_physicalgpus",
            "PhysicalGPUs by node, vendor, model and bound driver type",
            labels=["node", "vendor", "model", "driver_type"],
        )
        for group, n in card_counts(cards):
            count.add_metric([group.node, group.vendor, group.model, group.driver_type], float(n))
        yield count
        condition = GaugeMetricFamily(
            "d8_gpu_physicalgpu_condition",
            "PhysicalGPU condition status: 1 for the current status, 0 for the others (unset is unknown)",
            labels=["physicalgpu", "node", "condition", "status"],
        )
        for sample in condition_samples(cards):
            condition.add_metric(
                [sample.physicalgpu, sample.node, sample.condition, sample.status], sample.value
            )
        yield condition


class ControllerMetrics:
    """Owns a registry of its own: nothing global, so tests and the simulator can run several."""

    def __init__(
        self, cards: Cards, is_leader: Callable[[], bool], registry: CollectorRegistry | None = None
    ) -> None:
        self.registry = registry or CollectorRegistry()
        self._reconciles = Counter(
            "d8_gpu_controller_reconciles",
            "Node passes of gpu-controller by result (success, error, skipped)",
            ["result"],
            registry=self.registry,
        )
        for result in RESULTS:  # present from the start, so rate() sees the first increase
            self._reconciles.labels(result)
        self._duration = Histogram(
            "d8_gpu_controller_reconcile_duration_seconds",
            "Duration of one node pass of gpu-controller",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(InventoryCollector(cards, is_leader))
        ProcessCollector(registry=self.registry)

    def observe_reconcile(self, result: str, seconds: float) -> None:
        self._reconciles.labels(result).inc()
        self._duration.observe(seconds)
