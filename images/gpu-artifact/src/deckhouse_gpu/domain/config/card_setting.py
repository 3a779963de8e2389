# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A setting of a whole card that a sharing strategy needs while shares of the card are prepared
(DESIGN.md D20): time-slicing's interval, MPS's compute mode.

A strategy names its setting (``SharingStrategy.card_setting``) and the value a plan of it needs
(``card_value``); domain/prepare/sharing.py folds those per card over the checkpoint's entries and
services/prepare/sharing_settle.py applies them through the port, setting by setting, without
naming one. What is given back when no entry asks any more is the setting's own rule: only the
values a strategy sets go back to the default, so a value an operator chose is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CardSetting:
    name: str  # its key: in the port's calls, the adapters' appliers and the simulated card's state
    label: str  # the words a person reads it by, as ``nvidia-smi -q`` shows the card
    default: str  # what the driver starts a card at
    values: tuple[str, ...]  # every value a card may have
    given_back: frozenset[str]  # the values a strategy sets: back to the default once no entry asks

    def target(self, wanted: str | None, current: str | None) -> str | None:
        """What to apply to a card that has ``current`` (None: it cannot be read) when its entries
        want ``wanted`` (None: no entry asks); None: leave the card as it is."""
        if wanted is None:
            if current is not None and current not in self.given_back:
                return None  # the default already, or an operator's choice
            wanted = self.default
        return None if current == wanted else wanted
