# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""GPU / Node: the cards of one node, their conditions, what is allocated there and their DCGM
telemetry card by card."""

from __future__ import annotations

from .kit import Board, Query, node_variable, table_panel, timeseries_panel
from .workloads import node_rows

NODE = 'node="$node"'
# One series per card: DCGM also reports every MIG instance of a card in MIG mode.
CARD = f'{NODE}, GPU_I_PROFILE=""'
LEGEND = "{{gpu}} {{pci_bus_id}}"


def cards(board: Board) -> None:
    board.row("Cards").add(
        table_panel(
            "Conditions",
            "DriverReady and HardwareHealthy of each card of the node: the status each one has now.",
            Query(f"max by (physicalgpu, condition, status) (d8_gpu_physicalgpu_condition{{{NODE}}} == 1)"),
        ),
        table_panel(
            "Models",
            "The node's cards by model and the driver they are bound to.",
            Query(f"sum by (model, driver_type) (d8_gpu_physicalgpus{{{NODE}}})"),
        ),
        table_panel(
            "Allocated devices",
            "Devices of the node's cards allocated to claims, by DeviceClass and mode.",
            Query(f"sum by (device_class, mode) (d8_gpu_allocated_devices{{{NODE}}})"),
            width=24,
        ),
    )


def load(board: Board) -> None:
    board.row("Load (DCGM)").add(
        timeseries_panel(
            "GPU utilization",
            "Share of time each card was busy running kernels (DCGM_FI_DEV_GPU_UTIL).",
            "percent",
            Query(f"DCGM_FI_DEV_GPU_UTIL{{{CARD}}}", LEGEND),
        ),
        timeseries_panel(
            "Memory copy utilization",
            "Share of time each card's memory was being read or written (DCGM_FI_DEV_MEM_COPY_UTIL).",
            "percent",
            Query(f"DCGM_FI_DEV_MEM_COPY_UTIL{{{CARD}}}", LEGEND),
        ),
        timeseries_panel(
            "GPU memory used",
            "Framebuffer memory in use on each card and, for a card in MIG mode, in each MIG instance.",
            "mbytes",
            Query(f"DCGM_FI_DEV_FB_USED{{{CARD}}}", LEGEND),
            Query(
                f'DCGM_FI_DEV_FB_USED{{{NODE}, GPU_I_PROFILE!=""}}',
                "{{gpu}} MIG {{GPU_I_PROFILE}} #{{GPU_I_ID}}",
            ),
        ),
        timeseries_panel(
            "GPU memory used, share",
            "Framebuffer memory in use as a share of each card's framebuffer.",
            "percentunit",
            Query(
                f"DCGM_FI_DEV_FB_USED{{{CARD}}} / "
                f"(DCGM_FI_DEV_FB_USED{{{CARD}}} + DCGM_FI_DEV_FB_FREE{{{CARD}}})",
                LEGEND,
            ),
        ),
        timeseries_panel(
            "Clocks",
            "Streaming multiprocessor and memory clocks of each card; a drop under load means throttling.",
            "hertz",
            Query(f"DCGM_FI_DEV_SM_CLOCK{{{CARD}}} * 1e6", f"SM {LEGEND}"),
            Query(f"DCGM_FI_DEV_MEM_CLOCK{{{CARD}}} * 1e6", f"memory {LEGEND}"),
        ),
        timeseries_panel(
            "PCIe replays",
            "PCIe transfers each card had to retry per second; a steady rate points at the slot, riser or "
            "card.",
            "ops",
            Query(f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{CARD}}}[$__rate_interval])", LEGEND),
        ),
    )


def health(board: Board) -> None:
    board.row("Health (DCGM)").add(
        timeseries_panel(
            "Temperature",
            "GPU and memory temperature of each card; the alert D8GPUTemperatureHigh fires at 85 C.",
            "celsius",
            Query(f"DCGM_FI_DEV_GPU_TEMP{{{CARD}}}", f"GPU {LEGEND}"),
            Query(f"DCGM_FI_DEV_MEMORY_TEMP{{{CARD}}}", f"memory {LEGEND}"),
        ),
        timeseries_panel(
            "Power draw",
            "Power drawn by each card.",
            "watt",
            Query(f"DCGM_FI_DEV_POWER_USAGE{{{CARD}}}", LEGEND),
        ),
        timeseries_panel(
            "Last XID error",
            "The last XID error each card reported (0: none since the driver loaded). The alerts "
            "D8GPUXidError and D8GPUXidErrorNeedsReset explain the codes.",
            "none",
            Query(f"DCGM_FI_DEV_XID_ERRORS{{{CARD}}}", LEGEND),
        ),
        timeseries_panel(
            "Remapped memory rows",
            "Memory rows each card remapped because of uncorrectable and correctable ECC errors, and whether "
            "a remapping failed (1).",
            "none",
            Query(f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{CARD}}}", f"uncorrectable {LEGEND}"),
            Query(f"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{{{CARD}}}", f"correctable {LEGEND}"),
            Query(f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{CARD}}}", f"failed {LEGEND}"),
        ),
    )


def build() -> Board:
    board = Board(
        uid="d8-gpu-node",
        title="GPU / Node",
        description="The GPUs of one node: conditions, allocations and DCGM telemetry card by card.",
        variables=[node_variable("d8_gpu_physicalgpus")],
    )
    for section in (cards, node_rows, load, health):
        section(board)
    return board
