"""Simulated MIG that also leaves the traces the NVIDIA driver leaves on the host: the capability
access files under /proc/driver/nvidia/capabilities and the /dev/nvidia-caps nodes, which CDI
discovery reads. Used by the tests and the simulator with a host tree built by driver_tree."""

from __future__ import annotations

import shutil
from pathlib import Path

from deckhouse_gpu.adapters.sim.driver_tree import add_mig_instance
from deckhouse_gpu.adapters.sim.sim_mig import SimulatedMig
from deckhouse_gpu.ports.mig import MigInstance


class HostTreeMig:
    """Implements MigControl by delegating to SimulatedMig and mirroring instances on disk."""

    def __init__(self, inner: SimulatedMig, host_root: Path, card_minors: dict[str, int]) -> None:
        self.inner = inner
        self.host_root = host_root
        self.card_minors = card_minors

    def mig_enabled(self, card: str) -> bool:
        return self.inner.mig_enabled(card)

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        self.inner.set_mig_mode(card, enabled)

    def card_busy(self, card: str) -> bool:
        return self.inner.card_busy(card)

    def instances(self, card: str) -> list[MigInstance]:
        return self.inner.instances(card)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        instance = self.inner.create_instance(card, profile_id, placement_start)
        minor = self.card_minors[card]
        gi_minor = 100 * (minor + 1) + 2 * instance.gpu_instance_id  # unique per node, like mig-minors
        add_mig_instance(
            self.host_root,
            minor,
            instance.gpu_instance_id,
            instance.compute_instance_id,
            gi_minor,
            gi_minor + 1,
        )
        return instance

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        self.inner.destroy_instance(card, gpu_instance_id, compute_instance_id)
        gi_dir = (
            self.host_root
            / f"proc/driver/nvidia/capabilities/gpu{self.card_minors[card]}/mig/gi{gpu_instance_id}"
        )
        shutil.rmtree(gi_dir, ignore_errors=True)
