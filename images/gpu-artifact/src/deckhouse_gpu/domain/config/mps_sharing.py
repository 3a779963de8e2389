# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The sharing strategy ``MPS``: the processes of every share run at once under the card's (or the
MIG instance's) MPS control daemon, each held to its limits (docs/SHARING.md). Whole cards and
MIG instances may use it; how prepare turns a share into limits is domain/prepare/sharing.py, the
daemon domain/prepare/mps.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.domain.config.json_words import join, json_type
from deckhouse_gpu.domain.config.sharing_strategy import FieldReader, SharingConfig

NAME = "MPS"
MIB = 1024 * 1024
_FIELDS = ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit")


@dataclass(frozen=True)
class MPS(SharingConfig):
    """Limits the MPS control daemon gives each client; None leaves the CUDA default (no limit)."""

    default_active_thread_percentage: int | None = None
    default_pinned_device_memory_limit: Quantity | None = None


class MpsStrategy:
    name = NAME
    field = "mps"
    nvidia_field = "mpsConfig"
    device_types: tuple[str, ...] = ("Physical", "MIG")
    config: type[SharingConfig] = MPS

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
