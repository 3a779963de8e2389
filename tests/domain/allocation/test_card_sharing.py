# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a share asks of its whole card, as the allocation audit compares shares of one card."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.allocation.card_sharing import card_sharing
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION

SHARE = {"request": "gpu", "driver": "gpu.deckhouse.io", "device": "gpu-0000-17-00-0", "shareID": "s1"}


def allocation(*parameters: Any) -> dict[str, Any]:
    config = [
        {"source": "FromClaim", "opaque": {"driver": "gpu.deckhouse.io", "parameters": p}} for p in parameters
    ]
    return {"devices": {"results": [SHARE], "config": config}}


def gpu(sharing: dict[str, Any] | None) -> dict[str, Any]:
    found: dict[str, Any] = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig"}
    if sharing is not None:
        found["sharing"] = sharing
    return found


@pytest.mark.parametrize(
    ("parameters", "asked"),
    [
        ((), "TimeSlicing (interval Default)"),
        ((gpu(None),), "TimeSlicing (interval Default)"),
        ((gpu({"strategy": "TimeSlicing"}),), "TimeSlicing (interval Default)"),
        (
            (gpu({"strategy": "TimeSlicing", "timeSlicing": {"interval": "Short"}}),),
            "TimeSlicing (interval Short)",
        ),
        ((gpu({"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 10}}),), "MPS"),
        ((gpu({"strategy": "MPS"}), gpu({"strategy": "TimeSlicing"})), "TimeSlicing (interval Default)"),
        (
            ({"apiVersion": LEGACY_API_VERSION, "kind": "MIGConfig", "sharing": {"strategy": "MPS"}},),
            "TimeSlicing (interval Default)",
        ),
        (({"apiVersion": LEGACY_API_VERSION, "kind": "VFIOConfig"},), None),  # never prepared on a share
        ((gpu({"strategy": "Exclusive"}),), None),  # does not decode: prepare refuses it
    ],
)
def test_what_a_share_asks_of_its_card(parameters: tuple[Any, ...], asked: str | None) -> None:
    assert card_sharing(SHARE, allocation(*parameters)) == asked


def test_configs_of_other_drivers_are_ignored() -> None:
    theirs = {"opaque": {"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}}}
    found = allocation(gpu({"strategy": "MPS"}))
    found["devices"]["config"].append(theirs)
    assert card_sharing(SHARE, found) == "MPS"
