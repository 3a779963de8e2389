# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What sharing one allocated device asks of the host, and which shares cannot sit on one card.

A device's sharing comes from its opaque config (``GPUConfig.sharing`` / ``MIGConfig.sharing``,
resolved by ``allocation.claim_config.device_config``) and, for a share of a card, from the share
the scheduler gave it (``consumedCapacity.sharePercent``). MPS limits a client: when the config
sets no limit, the claim's share is the limit (25 % of an A30: 25 % of the threads and 6144 MiB),
so a share is enforced, not only accounted (docs/SHARING.md); a share that also consumed some of the
card's ``memory`` capacity gets that as its memory limit instead. Time-slicing cannot cap a process:
its shares are accounting only.

One card, one strategy: the time-slice interval is a setting of the whole card and MPS needs the
card in EXCLUSIVE_PROCESS mode with one control daemon, so every share prepared on a card must
use the same strategy, and time-sliced shares the same interval. No sharing config on a share
means what the card does by itself: time-slicing at the default interval. MPS limits may differ
between shares: each client carries its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.mps_sharing import MPS, MPS_SHARING
from deckhouse_gpu.domain.config.opaque_types import DeviceConfig
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICING, TimeSliceInterval, TimeSlicing
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan

MEBIBYTE = 1024 * 1024


class SharingRefused(ValueError):
    """A device's sharing that cannot be honoured; the message says what to change."""


@dataclass(frozen=True)
class DeviceSharing:
    """The sharing of one prepared device, as prepare applies it (limits already resolved)."""

    strategy: str  # a name of the registry (domain/config/features.py)
    time_slice: TimeSliceInterval | None = None  # TimeSlicing only
    mps_thread_percentage: int | None = None  # MPS only; None: no limit
    mps_memory_limit_mib: int | None = None  # MPS only; None: no limit


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


def _mps(config: MPS, share: Fraction | None, memory_mib: int | None, asked_mib: int | None) -> DeviceSharing:
    threads = config.default_active_thread_percentage
    limit = config.default_pinned_device_memory_limit
    memory = None if limit is None else _mebibytes(limit)
    partial = share is not None and share < 100
    shown = f"{float(share or 0):g} %"
    if partial and threads is not None and share is not None and threads > share:
        raise SharingRefused(
            f"mps.defaultActiveThreadPercentage {threads} is above the claim's share of the card "
            f"({shown}): lower it, or ask for a larger sharePercent"
        )
    # The memory a share asked for is its budget; without one, its share of the card's memory.
    budget, budget_text = asked_mib, f"the memory the claim asked for ({asked_mib}Mi)"
    if budget is None and partial and share is not None and memory_mib is not None:
        budget = math.floor(memory_mib * share / 100)
        budget_text = f"the claim's share of the card ({shown} of {memory_mib}Mi = {budget}Mi)"
    if memory is not None and budget is not None and memory > budget:
        raise SharingRefused(
            f"mps.defaultPinnedDeviceMemoryLimit {memory}Mi is above {budget_text}: lower it, or ask for more"
        )
    if partial and threads is None and share is not None:
        threads = math.ceil(share)
    memory = budget if memory is None else memory
    if memory is not None and memory_mib is not None and memory > memory_mib:
        raise SharingRefused(
            f"mps.defaultPinnedDeviceMemoryLimit {memory}Mi is above the device's memory ({memory_mib}Mi)"
        )
    return DeviceSharing(MPS_SHARING.name, mps_thread_percentage=threads, mps_memory_limit_mib=memory)


def device_sharing(
    config: DeviceConfig | None, share: Fraction | None, memory_mib: int | None, asked_mib: int | None = None
) -> DeviceSharing | None:
    """The sharing prepare applies to one device; None when its config sets none.

    ``share`` is the percentage of the card the claim consumed (None: not a share), ``memory_mib``
    the device's memory (a card's, or a MIG instance's), ``asked_mib`` the memory a share consumed
    from the card's ``memory`` capacity (None: none).
    """
    sharing = features.sharing_of(config)
    if isinstance(sharing, TimeSlicing):
        return DeviceSharing(TIME_SLICING.name, time_slice=sharing.interval)
    if isinstance(sharing, MPS):
        return _mps(sharing, share, memory_mib, asked_mib)
    return None


def sharing_of(plan: DevicePlan) -> DeviceSharing | None:
    """The sharing a plan carries (as the checkpoint stores it)."""
    if plan.sharing == TIME_SLICING.name:
        interval = TimeSliceInterval(plan.time_slice or TimeSliceInterval.DEFAULT)
        return DeviceSharing(TIME_SLICING.name, time_slice=interval)
    if plan.sharing == MPS_SHARING.name:
        return DeviceSharing(
            MPS_SHARING.name, mps_thread_percentage=plan.mps_threads, mps_memory_limit_mib=plan.mps_memory_mib
        )
    return None


def card_policy(plan: DevicePlan) -> str:
    """What a Physical device asks of its whole card: equal for every share that can coexist."""
    sharing = sharing_of(plan)
    if sharing is None:
        return features.card_policy(None)
    if sharing.strategy == TIME_SLICING.name:
        return features.card_policy(TimeSlicing(sharing.time_slice or TimeSliceInterval.DEFAULT))
    return features.card_policy(MPS())


def describe(plan: DevicePlan) -> str:
    sharing = sharing_of(plan)
    if sharing is None:
        return "no sharing config (time-slicing at the default interval)"
    if sharing.strategy == TIME_SLICING.name:
        return f"{TIME_SLICING.name} with interval {sharing.time_slice}"
    return MPS_SHARING.name


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


def card_time_slices(entries: Iterable[ClaimEntry]) -> dict[str, TimeSliceInterval]:
    """Card -> the interval its time-sliced shares asked for; cards not named go back to Default."""
    wanted: dict[str, TimeSliceInterval] = {}
    for entry in entries:
        for plan in entry.devices:
            sharing = sharing_of(plan)
            if plan.kind == "Physical" and sharing is not None and sharing.time_slice is not None:
                wanted[plan.card] = sharing.time_slice
    return wanted
