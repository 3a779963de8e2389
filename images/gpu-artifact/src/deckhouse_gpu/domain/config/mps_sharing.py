# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The sharing strategy ``MPS``: the processes of every share run at once under the card's (or the
MIG instance's) MPS control daemon, each held to its limits (docs/SHARING.md). Whole cards and
MIG instances may use it; the daemon is domain/prepare/mps.py.

MPS limits a client: when the config sets no limit, the claim's share is the limit (25 % of an
A30: 25 % of the threads and 6144 MiB), so a share is enforced, not only accounted
(docs/SHARING.md); a share that also consumed some of the card's ``memory`` capacity gets that as
its memory limit instead. Prepare keeps the limits in the device's plan (checkpoint fields
``mpsThreadPercentage`` and ``mpsMemoryLimitMiB``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, ClassVar

from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.json_words import join, json_type
from deckhouse_gpu.domain.config.sharing_strategy import (
    FieldReader,
    PlanReader,
    SharingConfig,
    SharingPlan,
    SharingRefused,
)
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

NAME = "MPS"
MIB = 1024 * 1024
_FIELDS = ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit")
_PLAN_FIELDS = ("mpsThreadPercentage", "mpsMemoryLimitMiB")  # of a checkpoint record


class ComputeMode(StrEnum):
    """NVML's compute modes (nvidia-smi -c); MPS needs EXCLUSIVE_PROCESS while its daemon runs."""

    DEFAULT = "Default"
    EXCLUSIVE_PROCESS = "ExclusiveProcess"
    PROHIBITED = "Prohibited"


# A whole card shared through MPS stays in EXCLUSIVE_PROCESS meanwhile; a MIG instance's daemon
# needs no mode (compute mode is a setting of the whole card). Only what MPS set is given back:
# PROHIBITED is an operator's choice, not ours.
COMPUTE_MODE = CardSetting(
    name="computeMode",
    label="compute mode",
    default=ComputeMode.DEFAULT,
    values=tuple(ComputeMode),
    given_back=frozenset({ComputeMode.EXCLUSIVE_PROCESS}),
)


@dataclass(frozen=True)
class MPS(SharingConfig):
    """Limits the MPS control daemon gives each client; None leaves the CUDA default (no limit)."""

    default_active_thread_percentage: int | None = None
    default_pinned_device_memory_limit: Quantity | None = None


@dataclass(frozen=True)
class MpsPlan(SharingPlan):
    """The limits prepare gives a device's clients; None: no limit."""

    strategy: ClassVar[str] = NAME
    thread_percentage: int | None = None
    memory_limit_mib: int | None = None


class MpsStrategy:
    name = NAME
    field = "mps"
    nvidia_field = "mpsConfig"
    device_types: tuple[str, ...] = ("Physical", "MIG")
    config: type[SharingConfig] = MPS
    card_setting: CardSetting | None = COMPUTE_MODE
    class_fields: Mapping[str, str] = {
        "sharePercent": (
            "time-slicing cannot hold a process to a share; a claim asks for its share with "
            "capacity.requests.sharePercent"
        )
    }

    def refusal(self, device_type: str) -> str:
        return f"{NAME} is not available for {device_type} devices"

    def read(self, reader: FieldReader, value: Any, path: str) -> MPS:
        fields = (reader.fields(value, path, self.field, _FIELDS) if value is not None else {}) or {}
        percentage = fields.get(_FIELDS[0])
        if percentage is not None:
            percentage = reader.integer(percentage, join(path, _FIELDS[0]), 1, 100)
        limit = fields.get(_FIELDS[1])
        if limit is not None:
            limit = _pinned_memory(reader, limit, join(path, _FIELDS[1]))
        return MPS(percentage, limit)

    def write(self, config: SharingConfig) -> dict[str, Any]:
        assert isinstance(config, MPS)
        out: dict[str, Any] = {}
        if config.default_active_thread_percentage is not None:
            out[_FIELDS[0]] = config.default_active_thread_percentage
        if config.default_pinned_device_memory_limit is not None:
            out[_FIELDS[1]] = config.default_pinned_device_memory_limit.text
        return out

    def card_policy(self, config: SharingConfig) -> str:
        return NAME  # limits may differ between shares: each client carries its own

    def share_cap(self, config: SharingConfig) -> tuple[str, int] | None:
        assert isinstance(config, MPS)
        threads = config.default_active_thread_percentage
        return None if threads is None else (join(self.field, _FIELDS[0]), threads)

    def plan(
        self, config: SharingConfig, share: Fraction | None, memory_mib: int | None, asked_mib: int | None
    ) -> MpsPlan:
        assert isinstance(config, MPS)
        threads = config.default_active_thread_percentage
        limit = config.default_pinned_device_memory_limit
        memory = None if limit is None else math.floor(limit.value / MIB)
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
                f"mps.defaultPinnedDeviceMemoryLimit {memory}Mi is above {budget_text}: "
                "lower it, or ask for more"
            )
        if partial and threads is None and share is not None:
            threads = math.ceil(share)
        memory = budget if memory is None else memory
        if memory is not None and memory_mib is not None and memory > memory_mib:
            raise SharingRefused(
                f"mps.defaultPinnedDeviceMemoryLimit {memory}Mi is above the device's memory ({memory_mib}Mi)"
            )
        return MpsPlan(threads, memory)

    def plan_json(self, plan: SharingPlan) -> dict[str, Any]:
        assert isinstance(plan, MpsPlan)
        values = (plan.thread_percentage, plan.memory_limit_mib)
        return {key: value for key, value in zip(_PLAN_FIELDS, values, strict=True) if value is not None}

    def plan_read(self, reader: PlanReader) -> MpsPlan:
        return MpsPlan(*(reader.value(key, int) for key in _PLAN_FIELDS))

    def plan_card_policy(self, plan: SharingPlan) -> str:
        return self.card_policy(MPS())

    def describe(self, plan: SharingPlan) -> str:
        return NAME

    def card_value(self, plan: SharingPlan) -> str:
        return ComputeMode.EXCLUSIVE_PROCESS

    def class_settings(self, fields: dict[str, Any], path: str, problems: list[str]) -> MPS | None:
        # A class's share is each client's share of the multiprocessors: the thread percentage.
        percent = fields.get("sharePercent")
        if percent is None:
            return None
        if type(percent) is not int or not 1 <= percent <= 100:
            problems.append(f"{join(path, 'sharePercent')}: {percent!r} is not an integer from 1 to 100")
            return None
        return MPS(percent)

    def class_words(self, config: SharingConfig | None) -> str:
        percent = config.default_active_thread_percentage if isinstance(config, MPS) else None
        return f"{NAME} share" + (f" {percent}%" if percent else "")


def _pinned_memory(reader: FieldReader, value: Any, path: str) -> Quantity | None:
    # Kubernetes accepts a quantity as a JSON string or number; so do we.
    if isinstance(value, bool) or not isinstance(value, str | int):
        reader.fail(path, f"must be a quantity such as 8Gi, not {json_type(value)}")
        return None
    try:
        quantity = Quantity.parse(str(value))
    except QuantityError:
        reader.fail(path, f"{json.dumps(value)} is not a quantity such as 512Mi or 8Gi")
        return None
    if quantity.value < MIB:
        reader.fail(path, f"{json.dumps(value)} is below the minimum 1Mi")
    elif quantity.value % MIB != 0:
        # CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes MiB: refuse what would be silently rounded.
        reader.fail(path, f"{json.dumps(value)} is not a whole number of Mi (MPS limits memory in MiB)")
    else:
        return quantity
    return None


MPS_SHARING = MpsStrategy()
