# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent's Prometheus metrics: inventory passes (a scan of the host and the writes that
follow), the udev events that trigger them, the devices it could not read, and its API writes.

Prometheus adds the node (the PodMonitor's relabeling); labels come from fixed lists
(domain/metric_labels.py).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

from deckhouse_gpu.adapters.metrics.api_write_metrics import ApiWriteMetrics
from deckhouse_gpu.domain.metric_labels import PASS_RESULTS, udev_action

PREFIX = "d8_gpu_node_agent"
# A pass reads sysfs and writes a few objects: milliseconds, seconds when the API is slow.
SCAN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class NodeAgentMetrics(ApiWriteMetrics):
    """Owns a registry of its own: nothing global, so tests and the simulator can run several."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry or CollectorRegistry()
        super().__init__(registry, PREFIX)
        self.scan_seconds = Histogram(
            f"{PREFIX}_scan_duration_seconds",
            "Duration of one inventory pass: scanning the host's PCI devices and writing PhysicalGPUs",
            buckets=SCAN_BUCKETS,
            registry=registry,
        )
        self.scans = Counter(
            f"{PREFIX}_scans",
            "Inventory passes by result (error: the host or the API failed; the pass is retried)",
            ["result"],
            registry=registry,
        )
        self.udev_events = Counter(
            f"{PREFIX}_udev_events",
            "Kernel uevents of PCI devices received, by action (overflow: events were lost)",
            ["action"],
            registry=registry,
        )
        self.unreadable = Gauge(
            f"{PREFIX}_unreadable_devices",
            "GPUs the last pass skipped because their sysfs files were unreadable or garbage",
            registry=registry,
        )
        for result in PASS_RESULTS:  # present from the start, so rate() sees the first increase
            self.scans.labels(result)
        for action in ("add", "remove", "bind", "unbind"):
            self.udev_events.labels(action)
        ProcessCollector(registry=registry)

    def observe_scan(self, ok: bool, seconds: float, unreadable: int) -> None:
        self.scans.labels("success" if ok else "error").inc()
        self.scan_seconds.observe(seconds)
        self.unreadable.set(unreadable)

    def observe_udev(self, action: str) -> None:
        self.udev_events.labels(udev_action(action)).inc()
