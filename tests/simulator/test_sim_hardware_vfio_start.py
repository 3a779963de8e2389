# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A simulated gpu-handler starts while a virtual machine holds one of its cards (found by
chaos-real: a handler restarted while a VFIO claim was prepared exited with "2 models for 1 PCI
addresses"). The models of ``--nvml-sim`` belong to the host's cards whatever driver holds them;
NVML shows the card on vfio-pci only once it is back on nvidia, as a real node's does."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import cast

from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from deckhouse_gpu.simulator.host.sim_vfio import SimulatedVfio
from deckhouse_gpu.simulator.node_hardware import SIMULATED

CARD_A, CARD_B = "0000:17:00.0", "0000:31:00.0"


def test_a_card_on_vfio_pci_at_start_keeps_its_model_and_returns_to_nvml(tmp_path: Path) -> None:
    host = HostBuilder(tmp_path).standard_node().install_nvidia_driver().load_driver("vfio-pci")
    host.add_gpu("a30", CARD_A, "nvidia", iommu_group=40)
    host.add_gpu("t4", CARD_B, "nvidia", iommu_group=41)
    SimulatedVfio(tmp_path).bind_vfio(CARD_B)  # a VFIO claim prepared before the handler's restart
    args = argparse.Namespace(host_root=str(tmp_path), nvml_sim="a30,t4", node_name="n1")

    addresses = SIMULATED.card_addresses(args, cast(KubeAPI, object()))  # the host root's: no API read
    nvml = SIMULATED.nvml(args, addresses)

    assert addresses == [CARD_A, CARD_B]
    assert nvml.device_addresses() == [CARD_A]  # out of NVML's sight while on vfio-pci
    assert isinstance(nvml, SimulatedNVML)
    SimulatedVfio(tmp_path, nvml).restore(CARD_B, "nvidia")  # the claim unprepared
    assert nvml.device_addresses() == [CARD_A, CARD_B]
    assert "T4" in nvml.snapshot(CARD_B).name  # its own model, not the other card's
