# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Builders of opaque config parameters for the tests of the opaque config
(tests/domain/config/test_opaque_config*.py): a GPUConfig or MIGConfig with the given sharing, and
MPS sharing with the given limits, in the legacy spelling (gpu.deckhouse.io/v1alpha1); ``respell``
turns them into the canonical one (resource.gpu.deckhouse.io/v1alpha1), so every case runs in both.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.config.opaque_types import API_VERSION, LEGACY_API_VERSION

CANONICAL_KINDS = {"GPUConfig": "GpuConfig", "MIGConfig": "MigDeviceConfig", "VFIOConfig": "VfioDeviceConfig"}


def gpu(sharing: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": LEGACY_API_VERSION, "kind": "GPUConfig", **extra}
    if sharing is not None:
        out["sharing"] = sharing
    return out


def mig(sharing: Any = None, **extra: Any) -> dict[str, Any]:
    return {**gpu(sharing, **extra), "kind": "MIGConfig"}


def mps(**fields: Any) -> dict[str, Any]:
    return {"strategy": "MPS", "mps": fields}


def respell(parameters: Any) -> Any:
    """The same legacy parameters in the canonical spelling; anything else is left as it is."""
    if not isinstance(parameters, dict) or parameters.get("apiVersion") != LEGACY_API_VERSION:
        return parameters
    kind = parameters.get("kind")
    canonical = CANONICAL_KINDS.get(kind, kind) if isinstance(kind, str) else kind
    return {**parameters, "apiVersion": API_VERSION, "kind": canonical}
