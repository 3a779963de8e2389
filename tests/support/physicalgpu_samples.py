# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""PhysicalGPU statuses with the values of real cards, to encode and check against the CRD."""

from __future__ import annotations

from deckhouse_gpu.domain.inventory import physicalgpu as pg

SOME_TIME = "2025-01-02T03:04:05Z"


def a30_status() -> pg.PhysicalGPUStatus:
    """A fully populated status with the values of a real A30 (DESIGN.md S4.2)."""
    named = pg.NamedID
    profiles = [
        pg.MigProfile(14, "1g.6gb", 5949, 1, 4, 14, 1, 1, 0, 0, 0, [pg.MigPlacement(i, 1) for i in range(4)]),
        pg.MigProfile(21, "1g.6gb+me", 5949, 1, 1, placements=[pg.MigPlacement(i, 1) for i in range(4)]),
        pg.MigProfile(5, "2g.12gb", 12032, 2, 2, placements=[pg.MigPlacement(0, 2), pg.MigPlacement(2, 2)]),
        pg.MigProfile(6, "2g.12gb+me", 12032, 2, 1),
        pg.MigProfile(0, "4g.24gb", 24125, 4, 1, placements=[pg.MigPlacement(0, 4)]),
    ]
    return pg.PhysicalGPUStatus(
        node_info=pg.NodeInfo(
            "worker-1", pg.OSInfo("ubuntu", "22.04", "Ubuntu 22.04.4 LTS"), "5.15.0-91", True
        ),
        pci_info=pg.PCIInfo(
            address="0000:02:00.0",
            class_=pg.PCIClass("0302", "3D controller"),
            vendor=named("10de", "NVIDIA Corporation"),
            device=named("20b7", "GA100GL [A30 PCIe]"),
            subsystem=pg.PCISubsystem("10de", "1532", "A30"),
            iommu_group=17,
            numa_node=0,
        ),
        capabilities=pg.Capabilities(
            product_name="NVIDIA A30",
            memory_mib=24576,
            vendor=pg.Vendor.NVIDIA,
            nvidia=pg.NvidiaCapabilities(
                compute_cap="8.0",
                product_architecture="Ampere",
                board_part_number="900-21001-0040-100",
                compute_types=["FP32", "FP64", "FP16", "BF16", "TF32", "INT8", "INT4"],
                power_limit_min_w=100,
                power_limit_max_w=165,
                mig_supported=True,
                mig=pg.MigCapabilities(total_slices=4, profiles=profiles),
            ),
        ),
        conditions=[
            pg.Condition(
                "DriverReady", pg.ConditionStatus.TRUE, "ValidatorReady", "", "2025-01-02T03:04:05Z", 1
            ),
            pg.Condition("HardwareHealthy", pg.ConditionStatus.TRUE, "NVMLOk", "ok", "2025-01-02T03:04:05Z"),
        ],
        current_state=pg.CurrentState(
            driver_type=pg.DriverType.NVIDIA,
            driver_name="nvidia",
            nvidia=pg.NvidiaState(
                gpu_uuid="GPU-5c8a6f1e-2b7d-4e0a-9f33-0123456789ab",
                driver_version="580.76.05",
                cuda_version="13.0",
                power_limit_current_w=165,
                power_limit_enforced_w=165,
                mig=pg.NvidiaMigState(pg.MigMode.DISABLED),
            ),
        ),
    )
