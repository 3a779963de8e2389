# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Who uses the GPUs in the demo: gpu-handler's prepared-device info, read from its /metrics, and
the figures a DCGM would join to it.

Each simulated node's gpu-handler measures its prepare service as ``gpu-handler run`` does
(adapters/metrics/handler_metrics.py); its registry is served on /metrics on a loopback port, as the real
one serves it on loopback behind its pod's kube-rbac-proxy, and read back over HTTP after each
prepare and unprepare. The simulator has
no DCGM: the figures here are made up per card, the same at every run, and joined as the recording
rules of monitoring/prometheus-rules/attribution.yaml join them (docs/MONITORING.md says what a
share's or a MIG instance's number means).
"""

from __future__ import annotations

import urllib.request
import zlib
from http.server import ThreadingHTTPServer
from typing import TextIO

from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.adapters.metrics.attribution_metrics import NAME
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics
from deckhouse_gpu.simulator.node import SimulatedNode
from deckhouse_gpu.simulator.simulation import SimulatedCluster

type Labels = dict[str, str]


class MetricsEndpoints:
    """One /metrics server per simulated gpu-handler, started when first read."""

    def __init__(self) -> None:
        self._servers: dict[str, ThreadingHTTPServer] = {}

    def url(self, node: SimulatedNode) -> str:
        server = self._servers.get(node.spec.name)
        if server is None:
            server = serve_metrics(("127.0.0.1", 0), node.metrics.registry)
            self._servers[node.spec.name] = server
        return f"http://127.0.0.1:{server.server_address[1]}/metrics"

    def prepared(self, node: SimulatedNode) -> tuple[str, list[Labels]]:
        """The exposition lines of the info metric, and their label sets, as served now."""
        with urllib.request.urlopen(self.url(node), timeout=5) as response:  # noqa: S310  # loopback
            text = response.read().decode()
        lines = [line for line in text.splitlines() if line.startswith(NAME + "{")]
        found = [
            dict(sample.labels)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == NAME
        ]
        return "\n".join(lines), found

    def close(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        self._servers.clear()


def step_lines(endpoints: MetricsEndpoints, node: SimulatedNode) -> list[str]:
    """After a prepare or an unprepare: what the node's gpu-handler now says of its devices."""
    text, found = endpoints.prepared(node)
    lines = [f"  gpu-handler's /metrics: {len(found)} prepared-device series ({NAME})"]
    return lines + [f"    {line}" for line in text.splitlines()]


def _made_up(labels: Labels, salt: str, modulo: int) -> int:
    """A figure of the device, the same at every run (no DCGM in the simulator)."""
    key = f"{salt}/{labels.get('pci_bus_id')}/{labels.get('GPU_I_ID')}"
    return zlib.crc32(key.encode()) % modulo


def _row(node: str, labels: Labels) -> list[str]:
    kind = labels.get("offer_type", "")
    busy = 5 + _made_up(labels, "util", 90)
    utilization = {"Physical": f"{busy} %", "Shared": f"{busy} % (the card's)"}.get(kind, "-")
    memory = f"{512 + _made_up(labels, 'memory', 8192)} MiB" if kind in ("Physical", "MIG") else "-"
    workload = f"{labels.get('namespace')}/{labels.get('pod') or '-'}"
    where = labels.get("pci_bus_id", "") + (f" GI {labels['GPU_I_ID']}" if labels.get("GPU_I_ID") else "")
    return [node, where, workload, labels.get("claim", ""), kind, utilization, memory]


def show_who_uses(cluster: SimulatedCluster, endpoints: MetricsEndpoints, out: TextIO) -> None:
    print(
        "\n$ # who uses the GPUs: gpu-handler's prepared-device info joined with simulated DCGM figures",
        file=out,
    )
    rows = [
        ["NODE", "CARD (DCGM pci_bus_id, GPU_I_ID)", "POD", "CLAIM", "TYPE", "UTILIZATION", "MEMORY USED"]
    ]
    for name, node in sorted(cluster.nodes.items()):
        rows += [_row(name, labels) for labels in endpoints.prepared(node)[1]]
    if len(rows) == 1:
        print("No device is prepared now (the steps above showed the series come and go).", file=out)
    else:
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out)
    print(
        "In a cluster: each node's gpu-handler serves this to Prometheus through its pod's\n"
        "kube-rbac-proxy (port 8443, https-metrics); the recording rules\n"
        "pod:d8_gpu_device_utilization_percent:max, pod:d8_gpu_device_memory_used_bytes:max and\n"
        "namespace:d8_gpu_* join it with dcgm-exporter's figures, and Grafana's 'GPU / Cluster'\n"
        "(row 'Who uses the GPUs') and 'GPU / Node' (table 'Prepared devices') show them.\n"
        "The figures here are made up; a share gets its card's utilization, a MIG instance its own\n"
        "memory and no utilization (docs/MONITORING.md).",
        file=out,
    )
