# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a share of a card asks of the whole card, as the allocation audit compares it.

The time-slice interval is a setting of the whole card, and MPS needs the card in
EXCLUSIVE_PROCESS mode with one control daemon, so every share of one card must use the same
strategy, and time-sliced shares the same interval (docs/SHARING.md). MPS limits may differ:
each client carries its own. A share without a sharing config gets what the card does by
itself, time-slicing at the default interval, so it sits beside ``TimeSlicing`` at ``Default``
and beside nothing else. The config is resolved as gpu-handler resolves it at prepare
(``claim_config.device_config``: class entries, then the claim's, the last for whole cards wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.allocation.claim_config import ConfigRefused, device_config
from deckhouse_gpu.domain.config import features


def card_sharing(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> str | None:
    """``"MPS"`` or ``"TimeSlicing (interval <interval>)"`` (``features.card_policy``): equal for two
    shares that can sit on one card. None when the config cannot be prepared at all (it does not
    decode, or asks for VFIO on a share): gpu-handler refuses that claim with its own message, so it
    never meets the others.

    Shared offers are whole cards (``deviceType: Physical``), so only configs of whole cards apply.
    """
    try:
        config = device_config(result, allocation, "Physical")
    except ConfigRefused:
        return None
    return features.card_policy(features.sharing_of(config))
