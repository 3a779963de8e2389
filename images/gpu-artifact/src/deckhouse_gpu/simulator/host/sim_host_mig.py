# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated MIG that also leaves the traces the NVIDIA driver leaves on the host: the capability
access files under /proc/driver/nvidia/capabilities and the /dev/nvidia-caps nodes, which CDI
discovery reads. Used by the tests and the simulator with a host tree built by driver_tree."""

from __future__ import annotations

import shutil
from pathlib import Path

from deckhouse_gpu.adapters.files.cdi_discovery import DiscoveryError, card_minor
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigError
from deckhouse_gpu.simulator.host.driver_tree import add_mig_instance
from deckhouse_gpu.simulator.host.sim_mig import SimulatedMig


class HostTreeMig:
    """Implements MigControl by delegating to SimulatedMig and mirroring instances on disk.

    A card's minor is read from the host tree when it is needed, as the driver would have it then:
    a card the driver registered after start works, and one it never registered fails with the
    file's name and meaning instead of a bare lookup error.
    """

    def __init__(self, inner: SimulatedMig, host_root: Path) -> None:
        self.inner = inner
        self.host_root = host_root

    def _minor(self, card: str) -> int:
        try:
            return card_minor(self.host_root, card)
        except DiscoveryError as error:
            raise MigError(f"card {card}: {error}") from None

    def mig_enabled(self, card: str) -> bool:
        return self.inner.mig_enabled(card)

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        self.inner.set_mig_mode(card, enabled)

    def card_busy(self, card: str) -> bool:
        return self.inner.card_busy(card)

    def instances(self, card: str) -> list[MigInstance]:
        return self.inner.instances(card)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        minor = self._minor(card)  # before the instance exists: a failure leaves nothing behind
        instance = self.inner.create_instance(card, profile_id, placement_start)
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
        try:
            minor = card_minor(self.host_root, card)
        except DiscoveryError:
            return  # the driver never registered the card, so it published no capability files
        gi_dir = self.host_root / f"proc/driver/nvidia/capabilities/gpu{minor}/mig/gi{gpu_instance_id}"
        shutil.rmtree(gi_dir, ignore_errors=True)
