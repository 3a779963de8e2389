# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The sharing strategy ``TimeSlicing``: the processes of every share take turns on the whole card
(docs/SHARING.md). Its one setting, the interval, is a setting of the whole card, so only configs
of whole cards may ask for it; a card without any sharing config time-slices at ``Default``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from deckhouse_gpu.domain.config.json_words import join, one_of, shown
from deckhouse_gpu.domain.config.sharing_strategy import FieldReader, SharingConfig

NAME = "TimeSlicing"


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


@dataclass(frozen=True)
class TimeSlicing(SharingConfig):
    interval: TimeSliceInterval = TimeSliceInterval.DEFAULT


class TimeSlicingStrategy:
    name = NAME
    field = "timeSlicing"
    nvidia_field = "timeSlicingConfig"
    device_types: tuple[str, ...] = ("Physical",)
    config: type[SharingConfig] = TimeSlicing

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


TIME_SLICING = TimeSlicingStrategy()
