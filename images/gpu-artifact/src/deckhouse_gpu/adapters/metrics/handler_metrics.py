# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's Prometheus metrics: prepare and unprepare of claims, MIG changes, NVML errors,
slice publishes, API write failures and the checkpoint.

Each node's handler exports its own numbers; Prometheus adds the node (the PodMonitor's
relabeling), so no metric carries a node label of its own. Labels come from fixed lists
(domain/prepare/metrics.py, domain/metric_labels.py): no claim names or UIDs, no error texts.
The one exception is the prepared-device info metric (adapters/metrics/attribution_metrics.py), whose
point is to name the claim and Pods each prepared device serves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

from deckhouse_gpu.adapters.metrics.api_write_metrics import ApiWriteMetrics
from deckhouse_gpu.adapters.metrics.attribution_metrics import PreparedDeviceCollector
from deckhouse_gpu.domain.inventory.other_owner import OWNER_REASONS
from deckhouse_gpu.domain.metric_labels import (
    MIG_OPERATIONS,
    NVML_ERRORS,
    NVML_QUERIES,
    PUBLISH_RESULTS,
    bounded,
)
from deckhouse_gpu.domain.offers.dropped_fields import CONSUMABLE, DEVICE_TAINTS, PARTITIONABLE
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint
from deckhouse_gpu.domain.prepare.metrics import prepared_by_type

PREFIX = "d8_gpu_handler"
# A Physical claim takes milliseconds; switching MIG mode or starting an MPS daemon takes seconds,
# and the kubelet gives up on a call after two minutes.
PREPARE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
FEATURES = (PARTITIONABLE, CONSUMABLE, DEVICE_TAINTS)


class HandlerMetrics(ApiWriteMetrics):
    """Owns a registry of its own: nothing global, so tests and the simulator can run several."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry or CollectorRegistry()
        super().__init__(registry, PREFIX)
        self.prepare_seconds = Histogram(
            f"{PREFIX}_prepare_duration_seconds",
            "Time gpu-handler took to prepare one claim (NodePrepareResources), by offer type",
            ["offer_type"],
            buckets=PREPARE_BUCKETS,
            registry=registry,
        )
        self.unprepare_seconds = Histogram(
            f"{PREFIX}_unprepare_duration_seconds",
            "Time gpu-handler took to unprepare one claim (NodeUnprepareResources), by offer type",
            ["offer_type"],
            buckets=PREPARE_BUCKETS,
            registry=registry,
        )
        self.prepare_errors = Counter(
            f"{PREFIX}_prepare_errors",
            "Claims gpu-handler failed to prepare, by reason and offer type (the kubelet retries them)",
            ["reason", "offer_type"],
            registry=registry,
        )
        self.unprepare_errors = Counter(
            f"{PREFIX}_unprepare_errors",
            "Claims gpu-handler failed to unprepare, by reason and offer type (the kubelet retries them)",
            ["reason", "offer_type"],
            registry=registry,
        )
        self.prepared_claims = Gauge(
            f"{PREFIX}_prepared_claims",
            "Claims prepared on this node (the checkpoint's completed entries), by offer type",
            ["offer_type"],
            registry=registry,
        )
        self.checkpoint_bytes = Gauge(
            f"{PREFIX}_checkpoint_size_bytes", "Size of the prepare checkpoint file", registry=registry
        )
        self.mig_created = Counter(
            f"{PREFIX}_mig_instances_created", "MIG instances gpu-handler created", registry=registry
        )
        self.mig_destroyed = Counter(
            f"{PREFIX}_mig_instances_destroyed", "MIG instances gpu-handler destroyed", registry=registry
        )
        self.mig_errors = Counter(
            f"{PREFIX}_mig_errors",
            "Failed MIG operations (mode switches, instance creation and destruction, reads), by operation",
            ["operation"],
            registry=registry,
        )
        self.nvml_errors = Counter(
            f"{PREFIX}_nvml_errors",
            "Failed NVML queries of the capabilities and health pass, by query and error",
            ["query", "error"],
            registry=registry,
        )
        self.publishes = Counter(
            f"{PREFIX}_slice_publishes",
            "Publishes of this node's ResourceSlices: changed (something written), unchanged, error",
            ["result"],
            registry=registry,
        )
        self.fallback = Gauge(
            f"{PREFIX}_dra_feature_fallback",
            "1 while this node publishes without a DRA feature because the API server dropped its fields",
            ["feature"],
            registry=registry,
        )
        self.device_status_dropped = Gauge(
            f"{PREFIX}_claim_device_status_dropped",
            "1 while the API server drops the status.devices gpu-handler writes into prepared claims "
            "(feature gate DRAResourceClaimDeviceStatus off)",
            registry=registry,
        )
        self.other_owner = Gauge(
            f"{PREFIX}_cards_held_by_other_owner",
            "This node's cards gpu-handler offers nothing of because another owner holds them "
            "(a device plugin, node-manager's or the GPU operator's, processes outside DRA), by reason",
            ["reason"],
            registry=registry,
        )
        for reason in OWNER_REASONS:
            self.other_owner.labels(reason).set(0)
        for result in PUBLISH_RESULTS:  # present from the start, so rate() sees the first increase
            self.publishes.labels(result)
        for feature in FEATURES:
            self.fallback.labels(feature).set(0)
        self.attribution = PreparedDeviceCollector()
        registry.register(self.attribution)
        ProcessCollector(registry=registry)

    def observe_prepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None:
        if seconds is not None:
            self.prepare_seconds.labels(offer_type).observe(seconds)
        if reason is not None:
            self.prepare_errors.labels(reason, offer_type).inc()

    def observe_device_status(self, kept: bool) -> None:
        self.device_status_dropped.set(0 if kept else 1)

    def observe_unprepare(self, offer_type: str, seconds: float | None, reason: str | None) -> None:
        if seconds is not None:
            self.unprepare_seconds.labels(offer_type).observe(seconds)
        if reason is not None:
            self.unprepare_errors.labels(reason, offer_type).inc()

    def observe_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.attribution.observe(checkpoint)
        for offer_type, count in prepared_by_type(checkpoint).items():
            self.prepared_claims.labels(offer_type).set(count)

    def watch_checkpoint_file(self, path: Path) -> None:
        """The checkpoint's size is read from the file at each scrape (0 while there is none)."""

        def size() -> float:
            with contextlib.suppress(OSError):
                return float(path.stat().st_size)
            return 0.0

        self.checkpoint_bytes.set_function(size)

    def observe_mig(self, operation: str, ok: bool) -> None:
        if not ok:
            self.mig_errors.labels(bounded(operation, MIG_OPERATIONS)).inc()
        elif operation == "create_instance":
            self.mig_created.inc()
        elif operation == "destroy_instance":
            self.mig_destroyed.inc()

    def observe_nvml_error(self, query: str, error: str) -> None:
        self.nvml_errors.labels(bounded(query, NVML_QUERIES), bounded(error, NVML_ERRORS)).inc()

    def observe_publish(self, result: str, fallen_back: Collection[str]) -> None:
        """One publish of the node's slices; ``fallen_back``: the features given up so far."""
        self.publishes.labels(bounded(result, PUBLISH_RESULTS)).inc()
        for feature in FEATURES:
            self.fallback.labels(feature).set(1 if feature in fallen_back else 0)

    def observe_other_owner(self, held: Mapping[str, int]) -> None:
        """Cards held by another owner now, by reason (DESIGN.md D16)."""
        for reason in OWNER_REASONS:
            self.other_owner.labels(reason).set(held.get(reason, 0))
