# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What sharing one allocated device asks of the host, and which shares cannot sit on one card.

A device's sharing comes from its opaque config (``GPUConfig.sharing`` / ``MIGConfig.sharing``,
resolved by ``allocation.claim_config.device_config``) and, for a share of a card, from the share
the scheduler gave it (``consumedCapacity.sharePercent``, and ``memory`` when it asked for some).
What prepare applies is the plan the config's strategy makes of them (``SharingStrategy.plan``,
domain/config/sharing_strategy.py; the MPS limits in domain/config/mps_sharing.py): this module
asks the registry (domain/config/features.py) and names no strategy.

One card, one strategy: two shares of a card must ask the same of it (the strategy's
``card_policy``): the time-slice interval is a setting of the whole card and MPS needs the card in
EXCLUSIVE_PROCESS mode with one control daemon. No sharing config on a share means what the card
does by itself (``features.CARD_DEFAULT``).

What a strategy needs of a whole card while its shares are prepared (the interval, MPS's compute
mode) is its ``card_setting``, folded here per card over the checkpoint's entries
(``card_settings``): the settle applies it from the checkpoint alone (DESIGN.md D9, D20).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.opaque_types import DeviceConfig
from deckhouse_gpu.domain.config.sharing_strategy import SharingPlan, SharingRefused
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

__all__ = [
    "SharingRefused",
    "asked_memory_mib",
    "card_policy",
    "card_settings",
    "describe",
    "device_sharing",
    "share_percent",
    "sharing_conflicts",
]

MEBIBYTE = 1024 * 1024


def share_percent(result: Mapping[str, Any]) -> Fraction | None:
    """The share of the card a result consumed; None for a device allocated whole."""
    if not result.get("shareID"):
        return None
    text = (result.get("consumedCapacity") or {}).get("sharePercent")
    if text is None:
        return Fraction(100)  # the offer's default request: the whole card
    try:
        return Quantity.parse(str(text)).value
    except QuantityError as error:
        raise SharingRefused(f"consumedCapacity.sharePercent {text!r} is not a quantity: {error}") from None


def asked_memory_mib(result: Mapping[str, Any]) -> int | None:
    """The memory a share consumed from the card's ``memory`` capacity; None when it asked for none."""
    text = (result.get("consumedCapacity") or {}).get("memory") if result.get("shareID") else None
    if text is None:
        return None
    try:
        mebibytes = _mebibytes(Quantity.parse(str(text)))
    except QuantityError as error:
        raise SharingRefused(f"consumedCapacity.memory {text!r} is not a quantity: {error}") from None
    return mebibytes or None


def _mebibytes(quantity: Quantity) -> int:
    return math.floor(quantity.value / MEBIBYTE)


def device_sharing(
    config: DeviceConfig | None, share: Fraction | None, memory_mib: int | None, asked_mib: int | None = None
) -> SharingPlan | None:
    """The sharing prepare applies to one device; None when its config sets none.

    ``share`` is the percentage of the card the claim consumed (None: not a share), ``memory_mib``
    the device's memory (a card's, or a MIG instance's), ``asked_mib`` the memory a share consumed
    from the card's ``memory`` capacity (None: none).
    """
    sharing = features.sharing_of(config)
    if sharing is None:
        return None
    return features.strategy_of(sharing).plan(sharing, share, memory_mib, asked_mib)


def card_policy(plan: DevicePlan) -> str:
    """What a Physical device asks of its whole card: equal for every share that can coexist."""
    if plan.sharing is None:
        return features.card_policy(None)
    return features.planned_by(plan.sharing).plan_card_policy(plan.sharing)


def describe(plan: DevicePlan) -> str:
    if plan.sharing is None:
        return "no sharing config (time-slicing at the default interval)"  # features.CARD_DEFAULT
    return features.planned_by(plan.sharing).describe(plan.sharing)


def sharing_conflicts(uid: str, plans: Iterable[DevicePlan], prepared: Iterable[ClaimEntry]) -> list[str]:
    """Why the plans' sharing cannot join the shares already prepared on their cards (empty: it can).

    Only shares of a whole card meet here: a MIG instance or an exclusive card has one claim."""
    others = [entry for entry in prepared if entry.uid != uid]
    found = []
    for plan in plans:
        if plan.kind != "Physical" or not plan.share_id:
            continue
        for entry in others:
            for old in entry.devices:
                if old.card != plan.card or old.kind != "Physical" or not old.share_id:
                    continue
                if card_policy(old) != card_policy(plan):
                    found.append(
                        f"card {plan.card} is shared with {describe(old)} by claim "
                        f"{entry.namespace}/{entry.name} ({entry.uid}); this claim asks for "
                        f"{describe(plan)}: every share of one card must use the same strategy and interval"
                    )
    return found


def card_settings(entries: Iterable[ClaimEntry]) -> dict[str, dict[str, str]]:
    """Card -> setting name -> the value its shares need, from every entry (half-prepared ones
    too): whole cards with a strategy that has a card setting (a MIG instance's share needs
    none, the settings being the whole card's). A setting no share of a card asks for is not
    named: the card gets what the setting gives back (``CardSetting.target``)."""
    wanted: dict[str, dict[str, str]] = {}
    for entry in entries:
        for plan in entry.devices:
            if plan.kind != "Physical" or plan.sharing is None:
                continue
            strategy = features.planned_by(plan.sharing)
            if strategy.card_setting is not None:
                wanted.setdefault(plan.card, {})[strategy.card_setting.name] = strategy.card_value(
                    plan.sharing
                )
    return wanted
