# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""GPU / Cluster: the cards of the cluster, their health, what is allocated and how the hardware
is loaded, across nodes."""

from __future__ import annotations

from .kit import Board, Query, stat_panel, table_panel, timeseries_panel
from .workloads import cluster_rows

HEALTHY = 'max by (physicalgpu) (d8_gpu_physicalgpu_condition{condition="HardwareHealthy", status="true"})'
READY = 'max by (physicalgpu) (d8_gpu_physicalgpu_condition{condition="DriverReady", status="true"})'
# DCGM reports a card in MIG mode once per MIG instance as well: whole-card figures skip those.
WHOLE = 'GPU_I_PROFILE=""'


def inventory(board: Board) -> None:
    board.row("Cards").add(
        stat_panel(
            "GPUs",
            "Physical GPUs in the cluster (PhysicalGPU objects).",
            "none",
            Query("sum(d8_gpu_physicalgpus)"),
        ),
        stat_panel(
            "Usable GPUs",
            "Cards whose driver is ready (DriverReady=True) and that answer NVML (HardwareHealthy=True): "
            "only these are offered to workloads.",
            "none",
            Query(f"count(({HEALTHY} == 1) and on (physicalgpu) ({READY} == 1)) or vector(0)"),
        ),
        stat_panel(
            "GPUs not ready or not healthy",
            "Cards offered to nobody: their driver is not ready, or NVML does not answer for them. The table "
            "below names them.",
            "none",
            Query(f"count(({HEALTHY} == 0) or ({READY} == 0)) or vector(0)"),
        ),
        table_panel(
            "GPUs by node and model",
            "How many cards of each model every node has, and the driver they are bound to (Nvidia, VFIO, "
            "None).",
            Query("sum by (node, model, driver_type) (d8_gpu_physicalgpus)"),
        ),
        table_panel(
            "Which GPUs are not ready or not healthy",
            "Each card with a condition that is not True, and its status (false, unknown). "
            "`kubectl describe physicalgpu <name>` gives the reason.",
            Query(
                "max by (physicalgpu, node, condition, status) "
                '(d8_gpu_physicalgpu_condition{status!="true"} == 1)'
            ),
        ),
        timeseries_panel(
            "GPUs by model",
            "Cards of each model over time.",
            "none",
            Query("sum by (model) (d8_gpu_physicalgpus)", "{{model}}"),
        ),
        timeseries_panel(
            "GPU nodes",
            "Nodes with at least one card, and nodes where the driver of every card is ready.",
            "none",
            Query("count(count by (node) (d8_gpu_physicalgpus))", "with GPUs"),
            Query(
                "count(min by (node) "
                '(d8_gpu_physicalgpu_condition{condition="DriverReady", status="true"}) == 1)',
                "driver ready",
            ),
        ),
    )


def allocation(board: Board) -> None:
    board.row("Allocation").add(
        timeseries_panel(
            "Allocated devices by DeviceClass",
            "Devices of gpu.deckhouse.io allocated to claims, per DeviceClass of the request "
            "(admin access not counted).",
            "none",
            Query("sum by (device_class) (d8_gpu_allocated_devices)", "{{device_class}}"),
        ),
        timeseries_panel(
            "Allocated devices by mode",
            "Whole cards (Physical), MIG instances and shares of a card (Shared) allocated to claims.",
            "none",
            Query("sum by (mode) (d8_gpu_allocated_devices)", "{{mode}}"),
        ),
        timeseries_panel(
            "Whole cards allocated",
            "Share of all cards allocated whole (Physical) to a claim.",
            "percentunit",
            Query(
                'sum(d8_gpu_allocated_devices{mode="Physical"}) / sum(d8_gpu_physicalgpus)', "allocated whole"
            ),
        ),
        timeseries_panel(
            "MIG instances by profile",
            "MIG instances that exist on the cards, per profile, as DCGM sees them. The module creates an "
            "instance when a claim for it is prepared and destroys it when the claim is released.",
            "none",
            Query('count by (GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED{GPU_I_PROFILE!=""})', "{{GPU_I_PROFILE}}"),
        ),
        table_panel(
            "Allocated devices by node",
            "Where the allocated devices are, by node, DeviceClass and mode.",
            Query("sum by (node, device_class, mode) (d8_gpu_allocated_devices)"),
            width=24,
        ),
    )


def sharing(board: Board) -> None:
    board.row("Sharing").add(
        timeseries_panel(
            "Shares allocated by DeviceClass",
            "Claims holding a share of a card (time-slicing or MPS), per DeviceClass.",
            "none",
            Query('sum by (device_class) (d8_gpu_allocated_devices{mode="Shared"})', "{{device_class}}"),
        ),
        table_panel(
            "Shares by node",
            "Shares of cards allocated on each node, per DeviceClass.",
            Query('sum by (node, device_class) (d8_gpu_allocated_devices{mode="Shared"})'),
        ),
    )


def telemetry(board: Board) -> None:
    board.row("Telemetry (DCGM)").add(
        timeseries_panel(
            "GPU utilization by node",
            "Average share of time the cards of each node were busy (DCGM_FI_DEV_GPU_UTIL).",
            "percent",
            Query(f"avg by (node) (DCGM_FI_DEV_GPU_UTIL{{{WHOLE}}})", "{{node}}"),
        ),
        timeseries_panel(
            "GPU memory used by node",
            "Framebuffer memory in use on each node, as a share of the framebuffer of its cards.",
            "percentunit",
            Query(
                f"sum by (node) (DCGM_FI_DEV_FB_USED{{{WHOLE}}}) / (sum by (node) "
                f"(DCGM_FI_DEV_FB_USED{{{WHOLE}}}) + sum by (node) (DCGM_FI_DEV_FB_FREE{{{WHOLE}}}))",
                "{{node}}",
            ),
        ),
        timeseries_panel(
            "Power draw by node",
            "Power drawn by the cards of each node.",
            "watt",
            Query(f"sum by (node) (DCGM_FI_DEV_POWER_USAGE{{{WHOLE}}})", "{{node}}"),
        ),
        timeseries_panel(
            "Hottest GPU by node",
            "The temperature of the hottest card of each node; the alert D8GPUTemperatureHigh fires at 85 C.",
            "celsius",
            Query(f"max by (node) (DCGM_FI_DEV_GPU_TEMP{{{WHOLE}}})", "{{node}}"),
        ),
        stat_panel(
            "GPUs with an XID error",
            "Cards whose last XID error (DCGM_FI_DEV_XID_ERRORS) is not 0. The dashboard GPU / Node shows "
            "which error.",
            "none",
            Query("count(DCGM_FI_DEV_XID_ERRORS > 0) or vector(0)"),
        ),
    )


def build() -> Board:
    board = Board(
        uid="d8-gpu-cluster",
        title="GPU / Cluster",
        description="The module's GPUs across the cluster: inventory, health, allocation, sharing, "
        "DCGM telemetry and who uses the GPUs.",
    )
    for section in (inventory, allocation, sharing, telemetry, cluster_rows):
        section(board)
    return board
