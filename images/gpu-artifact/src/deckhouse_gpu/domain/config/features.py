# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The one place that names each sharing strategy and each device type (DESIGN.md D20).

The opaque config's decoder and encoder, the allocation audit, prepare's sharing, the settle of
the card settings and the GPUClass spec and render ask here instead of naming a strategy
themselves; a new strategy is one module filling ``SharingStrategy``
(domain/config/sharing_strategy.py) and its line in ``STRATEGIES``. The order of ``STRATEGIES``
is the order messages list them in, and ``CARD_SETTINGS`` the order a card is settled in.

A device type is an offer type (the ResourceSlice attribute ``deviceType``) an opaque config kind
is meant for: ``GpuConfig`` for a whole card, ``MigDeviceConfig`` for a MIG instance
(``VfioDeviceConfig`` is a whole card too, for a virtual machine, and shares nothing).
"""

from __future__ import annotations

from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.mps_sharing import MPS_SHARING
from deckhouse_gpu.domain.config.opaque_types import DeviceConfig, DeviceType, GPUConfig, MIGConfig
from deckhouse_gpu.domain.config.sharing_strategy import SharingConfig, SharingPlan, SharingStrategy
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICING, TimeSlicing

STRATEGIES: tuple[SharingStrategy, ...] = (TIME_SLICING, MPS_SHARING)

# The settings of a whole card the strategies need, in the order a card is settled in.
CARD_SETTINGS: tuple[CardSetting, ...] = tuple(
    strategy.card_setting for strategy in STRATEGIES if strategy.card_setting is not None
)

# Device type -> the config kind meant for it, whose ``sharing`` may name a strategy.
DEVICE_TYPES: dict[DeviceType, type[GPUConfig] | type[MIGConfig]] = {"Physical": GPUConfig, "MIG": MIGConfig}

# What a card does with no sharing config at all: time-slicing at the default interval.
CARD_DEFAULT: SharingConfig = TimeSlicing()


def names() -> tuple[str, ...]:
    return tuple(strategy.name for strategy in STRATEGIES)


def named(name: object) -> SharingStrategy | None:
    """The strategy ``sharing.strategy`` names; None for a name of none."""
    return next((strategy for strategy in STRATEGIES if strategy.name == name), None)


def strategies_for(device_type: str) -> tuple[SharingStrategy, ...]:
    """The strategies a config of this device type may ask for, in the registry's order."""
    return tuple(strategy for strategy in STRATEGIES if device_type in strategy.device_types)


def strategy_of(config: SharingConfig) -> SharingStrategy:
    """The strategy whose settings ``config`` is."""
    return next(strategy for strategy in STRATEGIES if isinstance(config, strategy.config))


def planned_by(plan: SharingPlan) -> SharingStrategy:
    """The strategy whose plan ``plan`` is."""
    return next(strategy for strategy in STRATEGIES if strategy.name == plan.strategy)


def sharing_of(config: DeviceConfig | None) -> SharingConfig | None:
    """The sharing a device config asks for; None: none (a VFIO config never shares)."""
    return config.sharing if isinstance(config, GPUConfig | MIGConfig) else None


def card_policy(sharing: SharingConfig | None) -> str:
    """What a share asks of its whole card (None: no sharing config, the card's default): two
    shares can sit on one card only when this is equal."""
    chosen = CARD_DEFAULT if sharing is None else sharing
    return strategy_of(chosen).card_policy(chosen)
