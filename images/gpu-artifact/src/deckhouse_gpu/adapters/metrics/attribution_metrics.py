# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's ``d8_gpu_handler_prepared_device_info``: which claim and Pods each prepared device
serves, with dcgm-exporter's labels of the same hardware, so DCGM's figures can be attributed to
Pods and namespaces (monitoring/prometheus-rules/attribution.yaml).

A custom collector renders the series from the last checkpoint the prepare service loaded or
saved (adapters/metrics/metered_ports.py tells it), at every scrape: a series goes with its claim's
unprepare, and after a restart the first load of the checkpoint brings back exactly what is
prepared. Before that first load it exports nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from deckhouse_gpu.domain.prepare.attribution_series import LABELS, prepared_device_series
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint

NAME = "d8_gpu_handler_prepared_device_info"
HELP = (
    "1 for every device of a claim prepared on this node and every Pod the claim is reserved for, "
    "labelled as dcgm-exporter labels the same card or MIG instance"
)


class PreparedDeviceCollector(Collector):
    def __init__(self) -> None:
        self._checkpoint: Checkpoint | None = None  # replaced whole, so a scrape sees one version

    def observe(self, checkpoint: Checkpoint) -> None:
        self._checkpoint = checkpoint

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(NAME, HELP, labels=list(LABELS))]

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(NAME, HELP, labels=list(LABELS))
        checkpoint = self._checkpoint
        if checkpoint is not None:
            for series in prepared_device_series(checkpoint):
                family.add_metric(list(series.values()), 1.0)
        yield family
