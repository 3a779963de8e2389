# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Who uses the GPUs: DCGM's figures attributed to Pods, namespaces and claims through gpu-handler's
prepared-device info metric and the recording rules of monitoring/prometheus-rules/attribution.yaml.

A whole card's figures are its own, a MIG instance has only its memory, and a share of a card
gets the whole card's utilization (docs/MONITORING.md says why).
"""

from __future__ import annotations

from .kit import Board, Query, table_panel, timeseries_panel

POD_UTIL = "pod:d8_gpu_device_utilization_percent:max"
POD_MEMORY = "pod:d8_gpu_device_memory_used_bytes:max"
# Each device of a claim once, whatever the number of its Pods.
CLAIM_MEMORY = f"max by (namespace, claim, node, pci_bus_id, GPU_I_ID) ({POD_MEMORY})"
IDLE_PERCENT = 5


def cluster_rows(board: Board) -> None:
    board.row("Who uses the GPUs").add(
        table_panel(
            "Top Pods by GPU utilization",
            "The ten Pods whose devices are busiest: a whole card's utilization, or for a share of a card "
            "the whole card's (all its shares together). MIG instances report no utilization.",
            Query(f"topk(10, max by (namespace, pod, node, device, offer_type) ({POD_UTIL}))"),
        ),
        table_panel(
            "Top namespaces by GPU utilization",
            "The ten namespaces whose devices are busiest on average, each card counted once.",
            Query("topk(10, namespace:d8_gpu_utilization_percent:avg)"),
        ),
        table_panel(
            "Idle allocated GPUs",
            f"Whole cards and shares held by a claim that have been busy less than {IDLE_PERCENT} % of the "
            "time for the last hour (the alert D8GPUAllocatedGPUIdle fires for them); nobody else can "
            "use them meanwhile.",
            Query(f"claim:d8_gpu_device_utilization_percent:max_over_time_1h < {IDLE_PERCENT}"),
            width=24,
        ),
        timeseries_panel(
            "GPU memory used by namespace",
            "Memory in use on the whole cards and MIG instances each namespace holds (shares of a card "
            "are left out: DCGM counts the card's memory, not a share's).",
            "bytes",
            Query("namespace:d8_gpu_memory_used_bytes:sum", "{{namespace}}"),
        ),
        timeseries_panel(
            "Power draw by namespace",
            "Power drawn by the whole cards each namespace holds.",
            "watt",
            Query("namespace:d8_gpu_power_watts:sum", "{{namespace}}"),
        ),
        timeseries_panel(
            "GPU utilization by claim",
            "Each claim's history: how busy its devices were while it was prepared (for a share, the "
            "whole card).",
            "percent",
            Query(f"max by (namespace, claim) ({POD_UTIL})", "{{namespace}}/{{claim}}"),
        ),
        timeseries_panel(
            "GPU memory used by claim",
            "Each claim's history: memory in use on its whole cards and MIG instances.",
            "bytes",
            Query(f"sum by (namespace, claim) ({CLAIM_MEMORY})", "{{namespace}}/{{claim}}"),
        ),
    )


def node_rows(board: Board) -> None:
    board.row("Who uses the GPUs").add(
        table_panel(
            "Prepared devices",
            "Every device prepared on the node: the claim, the Pods it is reserved for, its DeviceClass, "
            "type and share, with the card's PCI address and MIG instance as DCGM names them.",
            Query(
                "max by (pci_bus_id, GPU_I_ID, GPU_I_PROFILE, device, namespace, claim, pod, device_class, "
                'offer_type, share_percent) (d8_gpu_handler_prepared_device_info{node="$node"})'
            ),
            width=24,
        ),
    )
