# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Builders of opaque config parameters for the tests of gpu.deckhouse.io/v1alpha1
(tests/domain/config/test_opaque_config*.py): a GPUConfig or MIGConfig with the given sharing, and
MPS sharing with the given limits.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.config.opaque_types import API_VERSION


def gpu(sharing: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "GPUConfig", **extra}
    if sharing is not None:
        out["sharing"] = sharing
    return out


def mig(sharing: Any = None, **extra: Any) -> dict[str, Any]:
    return {**gpu(sharing, **extra), "kind": "MIGConfig"}


def mps(**fields: Any) -> dict[str, Any]:
    return {"strategy": "MPS", "mps": fields}
