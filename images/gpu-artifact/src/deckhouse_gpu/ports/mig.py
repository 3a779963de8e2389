# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MIG control of one node's cards: what prepare and unprepare change on the host."""

from __future__ import annotations

from typing import Protocol

from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.host_change import HostChangeError


class MigError(HostChangeError):
    """A MIG operation failed; the message says which card, what and why."""


class MigModePending(MigError):
    """The mode change needs a GPU reset before it takes effect (the card is busy or the driver says so)."""


class MigControl(Protocol):
    def mig_enabled(self, card: str) -> bool:
        """The current MIG mode of the card."""
        ...

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        """Switches MIG mode; MigModePending when it needs a reset, MigError on failure."""
        ...

    def card_busy(self, card: str) -> bool:
        """True when processes run on the card (a mode switch must not happen under them)."""
        ...

    def instances(self, card: str) -> list[MigInstance]:
        """Every GPU instance (with its compute instance) now on the card."""
        ...

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        """A GPU instance at exactly this placement, plus one compute instance spanning it."""
        ...

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        """Destroys the compute instance, then the GPU instance; a missing one is not an error."""
        ...
