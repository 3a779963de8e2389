# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One MIG instance on a card: as the MIG port reports it (MigInstance), and as the checkpoint
records the ones a claim created (MigRecord)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MigInstance:
    card: str  # PCI address of the parent GPU
    gpu_instance_id: int
    compute_instance_id: int
    profile_id: int  # GPU instance profile id (nvidia-smi mig -lgip ID)
    placement_start: int
    placement_size: int
    uuid: str  # MIG-<uuid>, what CUDA_VISIBLE_DEVICES / the CDI device names

    @property
    def key(self) -> tuple[str, int, int]:
        """(card, GI, CI): how the checkpoint's MIG records name an instance."""
        return (self.card, self.gpu_instance_id, self.compute_instance_id)


@dataclass(frozen=True)
class MigRecord:
    """A MIG instance this claim created: what a rollback or unprepare destroys."""

    card: str
    gpu_instance_id: int
    compute_instance_id: int
    profile_id: int
    placement_start: int
    placement_size: int
    uuid: str

    @classmethod
    def from_instance(cls, instance: MigInstance) -> MigRecord:
        return cls(
            card=instance.card,
            gpu_instance_id=instance.gpu_instance_id,
            compute_instance_id=instance.compute_instance_id,
            profile_id=instance.profile_id,
            placement_start=instance.placement_start,
            placement_size=instance.placement_size,
            uuid=instance.uuid,
        )

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.card, self.gpu_instance_id, self.compute_instance_id)
