# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What sharing changes on a node: card-wide settings and MPS control daemons (docs/SHARING.md)."""

from __future__ import annotations

from typing import Protocol

from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.mps_sharing import ComputeMode
from deckhouse_gpu.domain.prepare.mps import MpsDaemon
from deckhouse_gpu.ports.host_change import HostChangeError

__all__ = ["CardSettings", "ComputeMode", "MpsDaemons", "SharingError"]  # ComputeMode: where tests import it


class SharingError(HostChangeError):
    """A sharing setting could not be read or made; the message says which card, what and why."""


class CardSettings(Protocol):
    """A card's settings that sharing strategies need (``features.CARD_SETTINGS``), each read and
    made by the setting it is: an adapter holds one applier per setting it can make."""

    def read(self, card: str, setting: CardSetting) -> str | None:
        """The card's value of ``setting``; None where it cannot be read (then it is always applied)."""
        ...

    def apply(self, card: str, setting: CardSetting, value: str) -> None:
        """Gives the card ``value`` of ``setting``; SharingError on failure, a setting this host
        cannot make included."""
        ...


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
