"""The opaque config of our driver that applies to one allocated device, as gpu-handler reads it.

An allocation carries the class's config entries first and the claim's after them; an entry
applies to a result when it names no requests or names the result's request (``req`` or
``req/sub``, or ``req`` for any of its subrequests). The last applicable entry wins, so a claim's
config overrides its class's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.opaque_config import (
    DRIVER,
    MPS,
    ConfigError,
    GPUConfig,
    MIGConfig,
    TimeSlicing,
    decode,
)


def applicable_parameters(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> Any | None:
    request = str(result.get("request"))
    base = request.partition("/")[0]
    chosen = None
    for entry in (allocation.get("devices") or {}).get("config") or ():
        opaque = entry.get("opaque") if isinstance(entry, Mapping) else None
        if not isinstance(opaque, Mapping) or opaque.get("driver") != DRIVER:
            continue
        requests = [str(r) for r in entry.get("requests") or ()]
        if not requests or request in requests or base in requests:
            chosen = opaque.get("parameters")
    return chosen


def sharing_strategy(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> str | None:
    """ "TimeSlicing", "MPS", None (no sharing set) or "Invalid" (a config that does not decode)."""
    parameters = applicable_parameters(result, allocation)
    if parameters is None:
        return None
    try:
        config = decode(parameters)
    except ConfigError:
        return "Invalid"
    sharing = config.sharing if isinstance(config, GPUConfig | MIGConfig) else None
    if isinstance(sharing, TimeSlicing):
        return "TimeSlicing"
    if isinstance(sharing, MPS):
        return "MPS"
    return None
