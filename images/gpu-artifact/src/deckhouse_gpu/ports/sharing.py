# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What sharing changes on a node: card-wide settings and MPS control daemons (docs/SHARING.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval
from deckhouse_gpu.domain.prepare.mps import MpsDaemon


class SharingError(Exception):
    """A sharing setting could not be read or made; the message says which card, what and why."""


class ComputeMode(StrEnum):
    """NVML's compute modes (nvidia-smi -c); MPS needs EXCLUSIVE_PROCESS while its daemon runs."""

    DEFAULT = "Default"
    EXCLUSIVE_PROCESS = "ExclusiveProcess"
    PROHIBITED = "Prohibited"


class CardSettings(Protocol):
    def time_slice(self, card: str) -> TimeSliceInterval | None:
        """The card's time-slice interval; None where it cannot be read (then it is always set)."""
        ...

    def set_time_slice(self, card: str, interval: TimeSliceInterval) -> None:
        """What ``nvidia-smi compute-policy --set-timeslice`` does; SharingError on failure."""
        ...

    def compute_mode(self, card: str) -> ComputeMode: ...

    def set_compute_mode(self, card: str, mode: ComputeMode) -> None: ...


class MpsDaemons(Protocol):
    def running(self) -> dict[str, MpsDaemon]:
        """This node's daemons by Pod name, ready or not (those being deleted left out)."""
        ...

    def start(self, daemon: MpsDaemon) -> bool:
        """Creates the daemon's Pod; False when it exists already. SharingError on failure."""
        ...

    def ready(self, daemon: MpsDaemon) -> bool:
        """True once the daemon accepts clients; SharingError when it failed for good."""
        ...

    def stop(self, name: str) -> None:
        """Deletes the daemon's Pod; a missing one is fine."""
        ...
