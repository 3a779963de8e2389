# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""GPU / Driver internals: whether the module's components run and lead, how fast gpu-controller
keeps the conditions, and what gpu-dra-controller allocates and audits."""

from __future__ import annotations

from .kit import Board, Query, timeseries_panel

TARGETS = 'job=~"gpu-controller|gpu-dra-controller|nvidia-dcgm-exporter", namespace="d8-gpu"'
QUANTILES = ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"))


def quantiles(histogram: str) -> tuple[Query, ...]:
    return tuple(
        Query(
            f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket[$__rate_interval])))",
            legend,
        )
        for q, legend in QUANTILES
    )


def components(board: Board) -> None:
    board.row("Components").add(
        timeseries_panel(
            "Scrape targets up",
            "Replicas of each component that Prometheus scrapes successfully (the alerts "
            "D8GPUControllerTargetDown, D8GPU*TargetAbsent and D8GPUDcgmExporterTargetDown watch them).",
            "none",
            Query(f"sum by (job) (up{{{TARGETS}}})", "{{job}}"),
        ),
        timeseries_panel(
            "Lease holders",
            "Which replica of each controller holds its Lease and works (1); the others wait.",
            "none",
            Query("max by (instance) (d8_gpu_controller_is_leader)", "gpu-controller {{instance}}"),
            Query("max by (instance) (d8_gpu_dra_controller_is_leader)", "gpu-dra-controller {{instance}}"),
        ),
    )


def controller(board: Board) -> None:
    board.row("gpu-controller").add(
        timeseries_panel(
            "Node passes by result",
            "Passes over a node's cards that set DriverReady, per second, by result (success, error, "
            "skipped).",
            "ops",
            Query(
                "sum by (result) (rate(d8_gpu_controller_reconciles_total[$__rate_interval]))", "{{result}}"
            ),
        ),
        timeseries_panel(
            "Node pass duration",
            "How long one pass over a node's cards takes: the median and the slow tail.",
            "s",
            *quantiles("d8_gpu_controller_reconcile_duration_seconds"),
        ),
        timeseries_panel(
            "gpu-controller memory",
            "Resident memory of each gpu-controller replica.",
            "bytes",
            Query('process_resident_memory_bytes{job="gpu-controller", namespace="d8-gpu"}', "{{instance}}"),
        ),
        timeseries_panel(
            "gpu-controller CPU",
            "CPU time each gpu-controller replica uses, in cores.",
            "none",
            Query(
                'rate(process_cpu_seconds_total{job="gpu-controller", namespace="d8-gpu"}[$__rate_interval])',
                "{{instance}}",
            ),
        ),
    )


def dra_controller(board: Board) -> None:
    board.row("gpu-dra-controller").add(
        timeseries_panel(
            "Allocation attempts by result",
            "Attempts per second to allocate the claims the scheduler never allocates (Pods with "
            "spec.nodeName, claims annotated gpu.deckhouse.io/allocate-on-node), by result.",
            "ops",
            Query(
                "sum by (result) (rate(d8_gpu_dra_controller_allocation_attempts_total[$__rate_interval]))",
                "{{result}}",
            ),
        ),
        timeseries_panel(
            "Time to allocation",
            "From a claim's creation to its allocation by gpu-dra-controller, for claims it saw unallocated.",
            "s",
            *quantiles("d8_gpu_claim_allocation_seconds"),
        ),
        timeseries_panel(
            "Allocation invariant violations",
            "Violations the last audit of every allocation found, by kind; anything above 0 raises "
            "D8GPUAllocationInvariantViolated.",
            "none",
            Query("max by (kind) (d8_gpu_allocation_invariant_violations)", "{{kind}}"),
        ),
        timeseries_panel(
            "Allocated devices by node",
            "Devices allocated to claims on each node, all modes together.",
            "none",
            Query("sum by (node) (d8_gpu_allocated_devices)", "{{node}}"),
        ),
    )


def build() -> Board:
    board = Board(
        uid="d8-gpu-internals",
        title="GPU / Driver internals",
        description="The module's own components: scrape targets, leaders, gpu-controller's passes and "
        "gpu-dra-controller's allocations and audit.",
    )
    for section in (components, controller, dra_controller):
        section(board)
    return board
