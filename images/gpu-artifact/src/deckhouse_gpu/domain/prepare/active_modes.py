# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which mode each card is prepared in, from the checkpoint: fed to offers (DESIGN.md D2 b)."""

from __future__ import annotations

from deckhouse_gpu.domain.offers.card_offers import ActiveMode
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint


def active_modes(checkpoint: Checkpoint) -> dict[str, ActiveMode]:
    """PCI address -> "MIG", "Physical" or "VFIO" (a whole card for a virtual machine, DESIGN.md D7)
    for every card something is prepared on (or half-prepared: until a leftover is rolled back, its
    card must not be offered the other way)."""
    modes: dict[str, ActiveMode] = {}
    for entry in checkpoint.claims.values():
        for device in entry.devices:
            modes[device.card] = "MIG" if device.kind == "MIG" else "VFIO" if device.vfio else "Physical"
    return modes
