# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The opaque config of our driver that applies to one allocated device, as gpu-handler reads it.

An allocation carries the class's config entries first and the claim's after them; an entry
applies to a result when it names no requests or names the result's request (``req`` or
``req/sub``, or ``req`` for any of its subrequests). The last applicable entry wins, so a claim's
config overrides its class's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.config.opaque_config import ConfigError, decode
from deckhouse_gpu.domain.config.opaque_types import (
    DRIVER,
    GPUConfig,
    MIGConfig,
    VFIOConfig,
)
from deckhouse_gpu.domain.config.opaque_types import device_type as config_device_type


def _entries(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> list[tuple[int, Any]]:
    request = str(result.get("request"))
    base = request.partition("/")[0]
    found = []
    for index, entry in enumerate((allocation.get("devices") or {}).get("config") or ()):
        opaque = entry.get("opaque") if isinstance(entry, Mapping) else None
        if not isinstance(opaque, Mapping) or opaque.get("driver") != DRIVER:
            continue
        requests = [str(r) for r in entry.get("requests") or ()]
        if not requests or request in requests or base in requests:
            found.append((index, opaque.get("parameters")))
    return found


def applicable_parameters(result: Mapping[str, Any], allocation: Mapping[str, Any]) -> Any | None:
    entries = _entries(result, allocation)
    return entries[-1][1] if entries else None


class ConfigRefused(ValueError):
    """A device's config that prepare cannot honour; the message says what to change."""


def device_config(
    result: Mapping[str, Any], allocation: Mapping[str, Any], device_type: str
) -> GPUConfig | MIGConfig | VFIOConfig | None:
    """The config gpu-handler applies to one allocated device (docs/CLAIM_CONFIG.md).

    Every applicable entry must decode; of those, the last one for the device's type wins (the
    claim's come after the class's). A VFIO config on a share cannot be honoured, nor one that is
    all a MIG instance gets.
    """
    chosen: GPUConfig | MIGConfig | VFIOConfig | None = None
    passthrough = False
    for index, parameters in _entries(result, allocation):
        try:
            config = decode(parameters)
        except ConfigError as error:
            raise ConfigRefused(f"allocation config[{index}]: {error}") from error
        if config_device_type(config) == device_type:
            chosen = config
        passthrough = passthrough or isinstance(config, VFIOConfig)
    if device_type == "MIG" and passthrough and chosen is None:
        # Only a VfioDeviceConfig applies: the request wanted a card for a VM and got a MIG instance.
        raise ConfigRefused(
            "VfioDeviceConfig (VFIOConfig) asks for a whole card for a virtual machine, but this device "
            "is a MIG instance: passthrough gives whole cards only; select whole cards (deviceType "
            "Physical) in the class of the request, or give the request a MigDeviceConfig (MIGConfig) "
            "for the MIG instances it may get"
        )
    if isinstance(chosen, VFIOConfig) and result.get("shareID"):
        raise ConfigRefused(
            "VfioDeviceConfig (VFIOConfig) needs a whole card of its own, but this device is a share of "
            "a card: use a DeviceClass that selects cards without allowMultipleAllocations"
        )
    return chosen


def unknown_requests(allocation: Mapping[str, Any], claim_devices: Mapping[str, Any]) -> list[str]:
    """Our config entries of an allocation that name a request the claim does not have (``req`` or
    ``req/sub``), worded as the webhook words them: an entry the webhook never saw must not
    silently configure nothing."""
    requests: dict[str, set[str]] = {}
    for request in claim_devices.get("requests") or ():
        if isinstance(request, Mapping) and isinstance(request.get("name"), str):
            subs = request.get("firstAvailable") or ()
            requests[request["name"]] = {str(s.get("name")) for s in subs if isinstance(s, Mapping)}
    known = ", ".join(sorted(requests)) or "none"
    found = []
    for index, entry in enumerate((allocation.get("devices") or {}).get("config") or ()):
        opaque = entry.get("opaque") if isinstance(entry, Mapping) else None
        if not isinstance(opaque, Mapping) or opaque.get("driver") != DRIVER:
            continue
        for position, ref in enumerate(entry.get("requests") or ()):
            name, slash, sub = str(ref).partition("/")
            if name not in requests or (slash and sub not in requests[name]):
                found.append(
                    f'allocation config[{index}].requests[{position}]: "{ref}" is not a request of this '
                    f"claim (its requests: {known})"
                )
    return found
