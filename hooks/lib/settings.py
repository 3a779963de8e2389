# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Internal values derived from the module's settings: pure logic of the derive_settings hook.

The templates read only these derived values, so every decision (high availability, log level,
how the driver root is mounted, which DRA features gpu-handler uses, which MIG profiles it offers)
is made once, here, where it is tested, instead of in template conditionals.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

LOG_LEVELS = {"Debug": "debug", "Info": "info", "Warn": "warning", "Error": "error"}
DRA_MODES = {"Auto": "auto", "Enabled": "on", "Disabled": "off"}
DRIVER_MOUNT = "/driver-root"  # where gpu-handler's image expects the driver root (prestart, NVML)
DRIVER_PARENT_MOUNT = "/driver-root-parent"


def high_availability(settings: Mapping[str, Any], global_values: Mapping[str, Any]) -> bool:
    """The module setting when set, else the cluster's global mode (Deckhouse's own rule)."""
    explicit = settings.get("highAvailability")
    if isinstance(explicit, bool):
        return explicit
    return global_values.get("highAvailability") is True


def driver_root_mount(root: str) -> dict[str, str]:
    """How the pods mount the host's driver root (docs/internal/DESIGN.md S10.4).

    ``/`` is mounted read-only as it is. Any other root belongs to a driver container that creates
    and mounts it after the pod may have started, so the pod mounts its parent with HostToContainer
    propagation and finds the root inside it once it appears.
    """
    root = "/" + root.strip("/") if root.strip("/") else "/"
    if root == "/":
        return {
            "root": "/",
            "hostPath": "/",
            "mountPath": DRIVER_MOUNT,
            "propagation": "None",
            "driverMount": DRIVER_MOUNT,
        }
    parent, name = posixpath.split(root)
    return {
        "root": root,
        "hostPath": parent,
        "mountPath": DRIVER_PARENT_MOUNT,
        "propagation": "HostToContainer",
        "driverMount": f"{DRIVER_PARENT_MOUNT}/{name}",
    }


class SettingsError(ValueError):
    """Settings the schema accepts but that cannot work; the hook fails with this message, so the
    module's run reports it and the running release stays as it was."""


def mig_profiles(rules: Any) -> list[dict[str, Any]]:
    """dra.migProfiles for gpu-handler: the schema checked each rule's fields; what it cannot check
    is a rule that repeats an earlier one's device and nodeSelector, which could never apply (the
    first match wins) and is most likely a mistake. Whether a model has the profiles named is
    known only on its nodes: gpu-handler reports that there."""
    normalised: list[dict[str, Any]] = []
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        device = str(rule.get("device") or "")
        selector = {str(k): str(v) for k, v in sorted((rule.get("nodeSelector") or {}).items())}
        key = (device, tuple(selector.items()))
        if key in seen:
            raise SettingsError(
                f"dra.migProfiles[{index}] repeats the device {device!r} and nodeSelector of "
                f"dra.migProfiles[{seen[key]}], so it would never apply: merge or remove one of them"
            )
        seen[key] = index
        profiles = sorted({str(name) for name in rule.get("profiles") or []})
        normalised.append({"device": device, "nodeSelector": selector, "profiles": profiles})
    return normalised


def derive(settings: Mapping[str, Any], global_values: Mapping[str, Any]) -> dict[str, Any]:
    dra = settings.get("dra") or {}
    return {
        "highAvailability": high_availability(settings, global_values),
        "logLevel": LOG_LEVELS.get(str(settings.get("logLevel")), "info"),
        "driverRoot": driver_root_mount(str(settings.get("nvidiaDriverRoot") or "/")),
        "dra": {
            "partitionableDevices": DRA_MODES.get(str(dra.get("partitionableDevices")), "auto"),
            "consumableCapacity": DRA_MODES.get(str(dra.get("consumableCapacity")), "auto"),
            "deviceTaints": DRA_MODES.get(str(dra.get("deviceTaints")), "auto"),
            "migProfiles": mig_profiles(dra.get("migProfiles") or []),
        },
    }
