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


# dra.migOffers: Auto. On kube-scheduler 1.34-1.36, for every node it tries, the scheduler gathers
# the counter slices of every node that offers dynamic MIG and then scans all slices of the
# cluster, so each GPU Pod pays about (nodes in the cluster) x (nodes offering dynamic MIG).
# Measured on real 1.35/1.36 schedulers (benchmarks/real_scheduler.py, 8 H100 a node, ms of
# scheduler CPU per Pod against ~15 for plain cards): 10 of 10 nodes ~46, 40 of 40 ~500, 16 of 200
# ~330, 200 of 200 ~8,000-12,000. Auto keeps dynamic MIG on every node while that product stays
# within MIG_OFFERS_BUDGET (16 of 16 nodes: ~100 ms per Pod), and past it offers dynamic MIG only on
# nodes labelled gpu.deckhouse.io/mig=true; it goes back only below 3/4 of the budget, so a cluster
# at the line does not roll gpu-handler on every node each time a node comes or goes. 1.37 has the
# fix (upstream PR #138917). Offers that follow the DeviceClasses (docs/DRA.md) cost about 2.5 times
# less with a typical class set (whole cards, 1g.10gb, 3g.40gb: ~170 ms against ~440-550 at 40 of
# 40), but the budget stays: this hook cannot see what the classes select, and one class of every
# device brings the whole layout back.
MIG_OFFERS_BUDGET = 16 * 16
FIXED_SCHEDULER_MINOR = 37


def kube_minor(version: Any) -> int | None:
    """The minor of ``global.discovery.kubernetesVersion`` ("1.35", "1.35.6", "v1.36.2")."""
    parts = str(version or "").lstrip("v").split(".")
    if len(parts) < 2 or parts[0] != "1" or not parts[1].isdigit():
        return None
    return int(parts[1])


# What Auto gives before the gpu_node_labels hook has decided: a cluster it has not counted yet.
AUTO_UNDECIDED = {"mode": "AllNodes", "reason": "LowSchedulerCost"}


def mig_offers(setting: Any, mig_nodes: int, nodes: int, kube_version: Any, previous: Any) -> dict[str, str]:
    """Which nodes offer dynamic MIG, and why: {"mode": AllNodes|OptIn, "reason"}. ``nodes`` is never
    taken below ``mig_nodes``."""
    if setting in ("AllNodes", "OptIn"):
        return {"mode": setting, "reason": "Configured"}
    minor = kube_minor(kube_version)
    if minor is not None and minor >= FIXED_SCHEDULER_MINOR:
        return {"mode": "AllNodes", "reason": "SchedulerScales"}
    was_opt_in = isinstance(previous, dict) and previous.get("mode") == "OptIn"
    budget = MIG_OFFERS_BUDGET * 3 // 4 if was_opt_in else MIG_OFFERS_BUDGET
    if mig_nodes * max(nodes, mig_nodes) > budget:
        return {"mode": "OptIn", "reason": "HighSchedulerCost"}
    return dict(AUTO_UNDECIDED)


def effective_mig_offers(setting: Any, decided: Any) -> dict[str, str]:
    """The mode gpu-handler gets: an explicit setting at once; for Auto, what the gpu_node_labels
    hook decided from the nodes (AUTO_UNDECIDED until it has)."""
    if setting in ("AllNodes", "OptIn"):
        return {"mode": setting, "reason": "Configured"}
    if isinstance(decided, dict) and decided.get("mode") in ("AllNodes", "OptIn"):
        return {"mode": str(decided["mode"]), "reason": str(decided.get("reason") or "")}
    return dict(AUTO_UNDECIDED)


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
    internal = settings.get("internal") or {}
    return {
        "highAvailability": high_availability(settings, global_values),
        "logLevel": LOG_LEVELS.get(str(settings.get("logLevel")), "info"),
        "driverRoot": driver_root_mount(str(settings.get("nvidiaDriverRoot") or "/")),
        "dra": {
            "partitionableDevices": DRA_MODES.get(str(dra.get("partitionableDevices")), "auto"),
            "consumableCapacity": DRA_MODES.get(str(dra.get("consumableCapacity")), "auto"),
            "deviceTaints": DRA_MODES.get(str(dra.get("deviceTaints")), "auto"),
            "migProfiles": mig_profiles(dra.get("migProfiles") or []),
            "migOffers": effective_mig_offers(dra.get("migOffers", "Auto"), internal.get("migOffers")),
        },
    }
