"""One MIG instance on a card, as the MIG port reports it and the checkpoint records it."""

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
