# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a sharing strategy contributes to the opaque config (DESIGN.md D20): the seam each
strategy module fills, and that domain/config/features.py registers.

A strategy is named once, by its module (``TimeSlicing`` in ``time_slicing``, ``MPS`` in
``mps_sharing``); everything else asks the registry. Each strategy says under which name a
config selects it (``sharing.strategy``), which object holds its settings (``sharing.<field>``),
which device types may use it, how its settings are read strictly and written back, and what it
asks of the whole card (two shares of one card must ask the same). On the node, it also says what
prepare applies to a device under it (its ``SharingPlan``, limits resolved from the device's
share), how that plan is kept in the checkpoint (its own flat fields of the device's record, next
to ``sharing: <name>``) and the setting of the whole card it needs meanwhile (``card_setting``).
A GPUClass asks for it by name with fields of its own (``class_fields``), which the strategy
turns into its settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Protocol

from deckhouse_gpu.domain.config.card_setting import CardSetting


@dataclass(frozen=True)
class SharingConfig:
    """The settings of one strategy, as a config's ``sharing`` decodes: each strategy subclasses it."""


@dataclass(frozen=True)
class SharingPlan:
    """What prepare applies to one device under a strategy (its limits resolved), as the
    checkpoint keeps it: each strategy subclasses it and names itself in ``strategy``."""

    strategy: ClassVar[str]


class SharingRefused(ValueError):
    """A device's sharing that cannot be honoured; the message says what to change."""


class PlanReader(Protocol):
    """What the checkpoint's decoder (domain/prepare/checkpoint.py) lends a strategy to read its
    fields of one device's record: a field of the wrong type or value raises there, with its path."""

    def value(self, key: str, kind: type) -> Any:
        """The field ``key`` checked against ``kind``; None when the record has none."""
        ...

    def one_of(self, key: str, value: str, allowed: tuple[str, ...]) -> str: ...


class FieldReader(Protocol):
    """What the strict decoder (domain/config/opaque_config.py) lends a strategy to read its object:
    every problem is collected with its path, not raised at the first."""

    def fail(self, path: str, reason: str) -> None: ...

    def fields(self, value: Any, path: str, owner: str, known: tuple[str, ...]) -> dict[str, Any] | None: ...

    def integer(self, value: Any, path: str, low: int, high: int) -> int | None: ...


class SharingStrategy(Protocol):
    name: str  # the value of sharing.strategy (and of a GPUClass's spec.sharing.strategy)
    field: str  # the object under sharing that holds its settings
    nvidia_field: str  # NVIDIA's name of that object, named in the hint when a config copies it
    device_types: tuple[str, ...]  # the offer types (deviceType) whose config may ask for it
    config: type[SharingConfig]  # what ``read`` returns
    card_setting: CardSetting | None  # the setting of a whole card its shares need; None: none
    # The fields of a GPUClass's spec.sharing it takes, each with why no other strategy takes it
    # (told when a class of another strategy sets it; "" says nothing more).
    class_fields: Mapping[str, str]

    def refusal(self, device_type: str) -> str:
        """Why a config of another device type may not ask for it, and what to use instead."""
        ...

    def read(self, reader: FieldReader, value: Any, path: str) -> SharingConfig:
        """Its settings from ``value`` (None: left out, the defaults), problems told to ``reader``."""
        ...

    def write(self, config: SharingConfig) -> dict[str, Any]:
        """The settings' object in the canonical spelling: ``read(write(c)) == c``."""
        ...

    def card_policy(self, config: SharingConfig) -> str:
        """What a share with these settings asks of its whole card: equal for shares that can sit
        on one card (the allocation audit and prepare's guard compare it)."""
        ...

    def share_cap(self, config: SharingConfig) -> tuple[str, int] | None:
        """The setting that caps each client at a percentage of the card (its path under
        ``sharing``) and its value; None when none is set. The webhook holds it to the claim's
        share (services/allocation/config_admission_shares.py), as ``plan`` does at prepare."""
        ...

    def plan(
        self, config: SharingConfig, share: Fraction | None, memory_mib: int | None, asked_mib: int | None
    ) -> SharingPlan:
        """What prepare applies to a device with these settings: ``share`` is the percentage of the
        card the claim consumed (None: not a share), ``memory_mib`` the device's memory, ``asked_mib``
        the memory a share consumed from the card's ``memory`` capacity; raises ``SharingRefused``."""
        ...

    def plan_json(self, plan: SharingPlan) -> dict[str, Any]:
        """The plan's own fields of the device's checkpoint record (unset ones left out)."""
        ...

    def plan_read(self, reader: PlanReader) -> SharingPlan:
        """The plan from its fields of a record (absent ones: as an older writer meant them)."""
        ...

    def plan_card_policy(self, plan: SharingPlan) -> str:
        """``card_policy`` of what a prepared device asks of its card."""
        ...

    def describe(self, plan: SharingPlan) -> str:
        """The plan in a message naming two shares that cannot sit on one card."""
        ...

    def card_value(self, plan: SharingPlan) -> str:
        """The value of ``card_setting`` a whole card needs while a device of it is shared under
        ``plan`` (the settle folds it per card over every entry, domain/prepare/sharing.py)."""
        ...

    def class_settings(self, fields: dict[str, Any], path: str, problems: list[str]) -> SharingConfig | None:
        """Its settings from the ``class_fields`` a GPUClass's ``path`` (spec.sharing) sets, only
        those given; each problem appended with its path; None when none is set (or none is valid):
        the class then names the strategy alone."""
        ...

    def class_words(self, config: SharingConfig | None) -> str:
        """What a class of these settings selects, for the SELECTS column of kubectl get gpuc."""
        ...
