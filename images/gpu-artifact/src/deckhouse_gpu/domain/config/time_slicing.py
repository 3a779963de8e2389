# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The sharing strategy ``TimeSlicing``: the processes of every share take turns on the whole card
(docs/SHARING.md). Its one setting, the interval, is a setting of the whole card, so only configs
of whole cards may ask for it; a card without any sharing config time-slices at ``Default``.
Prepare keeps the interval in the device's plan (checkpoint field ``timeSlice``): time-slicing
cannot cap a process, so a share is accounting only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, ClassVar

from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.json_words import join, one_of, shown
from deckhouse_gpu.domain.config.sharing_strategy import FieldReader, PlanReader, SharingConfig, SharingPlan

NAME = "TimeSlicing"
_TIME_SLICE = "timeSlice"  # the plan's field of a checkpoint record


class TimeSliceInterval(StrEnum):
    """How long a process runs before the card switches to the next one."""

    DEFAULT = "Default"
    SHORT = "Short"
    MEDIUM = "Medium"
    LONG = "Long"

    @property
    def nvidia_smi_value(self) -> int:
        """The argument of ``nvidia-smi compute-policy --set-timeslice``."""
        return list(TimeSliceInterval).index(self)


# The interval is a setting of the whole card (nvidia-smi compute-policy --set-timeslice).
TIME_SLICE = CardSetting(
    name=_TIME_SLICE,
    label="time-slice",
    default=TimeSliceInterval.DEFAULT,
    values=tuple(TimeSliceInterval),
    given_back=frozenset(TimeSliceInterval) - {TimeSliceInterval.DEFAULT},
)


@dataclass(frozen=True)
class TimeSlicing(SharingConfig):
    interval: TimeSliceInterval = TimeSliceInterval.DEFAULT


@dataclass(frozen=True)
class TimeSlicePlan(SharingPlan):
    """What prepare sets for a time-sliced device: its card's interval."""

    strategy: ClassVar[str] = NAME
    interval: TimeSliceInterval = TimeSliceInterval.DEFAULT


class TimeSlicingStrategy:
    name = NAME
    field = "timeSlicing"
    nvidia_field = "timeSlicingConfig"
    device_types: tuple[str, ...] = ("Physical",)
    config: type[SharingConfig] = TimeSlicing
    card_setting: CardSetting | None = TIME_SLICE
    class_fields: Mapping[str, str] = {"interval": ""}

    def refusal(self, device_type: str) -> str:
        return (
            f"{NAME} is not available for {device_type} devices: the time-slice interval is a setting of"
            " the whole card, and processes in one MIG instance are time-sliced anyway; use MPS"
        )

    def read(self, reader: FieldReader, value: Any, path: str) -> TimeSlicing:
        fields = reader.fields(value, path, self.field, ("interval",)) if value is not None else {}
        interval = (fields or {}).get("interval", TimeSliceInterval.DEFAULT.value)
        if interval in list(TimeSliceInterval):
            return TimeSlicing(TimeSliceInterval(interval))
        reader.fail(join(path, "interval"), f"{shown(interval)} is not one of {one_of(TimeSliceInterval)}")
        return TimeSlicing()

    def write(self, config: SharingConfig) -> dict[str, Any]:
        assert isinstance(config, TimeSlicing)
        return {"interval": str(config.interval)}

    def card_policy(self, config: SharingConfig) -> str:
        assert isinstance(config, TimeSlicing)
        return f"{NAME} (interval {config.interval})"

    def share_cap(self, config: SharingConfig) -> tuple[str, int] | None:
        return None  # time-slicing caps no process

    def plan(
        self, config: SharingConfig, share: Fraction | None, memory_mib: int | None, asked_mib: int | None
    ) -> TimeSlicePlan:
        assert isinstance(config, TimeSlicing)
        return TimeSlicePlan(config.interval)

    def plan_json(self, plan: SharingPlan) -> dict[str, Any]:
        assert isinstance(plan, TimeSlicePlan)
        return {_TIME_SLICE: str(plan.interval)}

    def plan_read(self, reader: PlanReader) -> TimeSlicePlan:
        text = reader.value(_TIME_SLICE, str)
        if text is None:
            return TimeSlicePlan()
        return TimeSlicePlan(TimeSliceInterval(reader.one_of(_TIME_SLICE, text, tuple(TimeSliceInterval))))

    def plan_card_policy(self, plan: SharingPlan) -> str:
        assert isinstance(plan, TimeSlicePlan)
        return self.card_policy(TimeSlicing(plan.interval))

    def describe(self, plan: SharingPlan) -> str:
        assert isinstance(plan, TimeSlicePlan)
        return f"{NAME} with interval {plan.interval}"

    def card_value(self, plan: SharingPlan) -> str:
        assert isinstance(plan, TimeSlicePlan)
        return plan.interval

    def class_settings(self, fields: dict[str, Any], path: str, problems: list[str]) -> TimeSlicing | None:
        interval = fields.get("interval")
        if interval is None:
            return None
        if interval not in list(TimeSliceInterval):
            problems.append(
                f"{join(path, 'interval')}: {interval!r} is not one of {', '.join(TimeSliceInterval)}"
            )
            return None
        return TimeSlicing(TimeSliceInterval(interval))

    def class_words(self, config: SharingConfig | None) -> str:
        return f"{NAME} share"


TIME_SLICING = TimeSlicingStrategy()
