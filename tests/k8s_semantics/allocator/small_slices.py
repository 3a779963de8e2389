# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Shared pieces of the allocator's rule tests (test_allocate_*.py): the two versions'
semantics, plain GPUs, the MIG device classes and a claim for a share of a card."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from tests.support.allocation import claim_object, device, device_class, exactly

V134 = Semantics("1.34")
V135 = Semantics("1.35")


def gpus(*names: str, **fields: object) -> list[dict[str, object]]:
    return [device(n, **fields) for n in names]  # type: ignore[arg-type]


MIG_CLASSES = [
    device_class("gpu"),
    device_class("mig", 'device.attributes["gpu.deckhouse.io"].kind == "mig"'),
]


def share(name: str, percent: str | None) -> dict[str, object]:
    fields: dict[str, Any] = {"capacity": {"requests": {"sharePercent": percent}}} if percent else {}
    return claim_object(name, exactly("gpu", **fields))
