# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The derive_settings hook: the internal values the templates read, from settings and globals."""

from __future__ import annotations

from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook

HOOK = load_hook("derive_settings")


def derived(settings: dict[str, Any], global_values: dict[str, Any] | None = None) -> dict[str, Any]:
    context = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    values = {"global": global_values or {}, "gpu": {**settings, "internal": {}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    result: dict[str, Any] = out.values["gpu"]["internal"]["settings"]
    return result


def test_defaults_follow_the_cluster_and_use_every_feature_automatically() -> None:
    assert derived({}) == {
        "highAvailability": False,
        "logLevel": "info",
        "driverRoot": {
            "root": "/",
            "hostPath": "/",
            "mountPath": "/driver-root",
            "propagation": "None",
            "driverMount": "/driver-root",
        },
        "dra": {
            "partitionableDevices": "auto",
            "consumableCapacity": "auto",
            "deviceTaints": "auto",
            "migProfiles": [],
            "migOffers": {"mode": "AllNodes", "reason": "LowSchedulerCost"},
        },
    }


@pytest.mark.parametrize(
    ("setting", "cluster", "expected"),
    [
        (None, True, True),
        (None, False, False),
        (None, None, False),
        (False, True, False),  # the module's own setting wins over the cluster's
        (True, False, True),
    ],
)
def test_high_availability(setting: bool | None, cluster: bool | None, expected: bool) -> None:
    settings = {} if setting is None else {"highAvailability": setting}
    global_values = {} if cluster is None else {"highAvailability": cluster}
    assert derived(settings, global_values)["highAvailability"] is expected


@pytest.mark.parametrize(
    ("level", "expected"), [("Debug", "debug"), ("Info", "info"), ("Warn", "warning"), ("Error", "error")]
)
def test_log_levels_map_to_the_components_names(level: str, expected: str) -> None:
    assert derived({"logLevel": level})["logLevel"] == expected


def test_a_containerised_driver_root_is_reached_through_its_parent_with_propagation() -> None:
    assert derived({"nvidiaDriverRoot": "/run/nvidia/driver"})["driverRoot"] == {
        "root": "/run/nvidia/driver",
        "hostPath": "/run/nvidia",
        "mountPath": "/driver-root-parent",
        "propagation": "HostToContainer",
        "driverMount": "/driver-root-parent/driver",
    }


def test_a_trailing_slash_does_not_change_the_mount() -> None:
    assert derived({"nvidiaDriverRoot": "/opt/nvidia/"})["driverRoot"]["driverMount"] == (
        "/driver-root-parent/nvidia"
    )


@pytest.mark.parametrize(("mode", "flag"), [("Auto", "auto"), ("Enabled", "on"), ("Disabled", "off")])
def test_dra_feature_modes_become_handler_flags(mode: str, flag: str) -> None:
    names = ("partitionableDevices", "consumableCapacity", "deviceTaints")
    dra = derived({"dra": dict.fromkeys(names, mode)})["dra"]
    assert dra == {
        "partitionableDevices": flag,
        "consumableCapacity": flag,
        "deviceTaints": flag,
        "migProfiles": [],
        "migOffers": {"mode": "AllNodes", "reason": "LowSchedulerCost"},
    }


def test_only_the_derived_values_are_patched() -> None:
    context = [{"binding": "beforeHelm", "type": "BeforeHelm", "snapshots": {}}]
    values = {"global": {}, "gpu": {"logLevel": "Debug", "internal": {"handlerNodes": ["w1"]}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    assert [patch["path"] for patch in out.values_patches.data] == ["/gpu/internal/settings"]
    assert out.values["gpu"]["internal"]["handlerNodes"] == ["w1"]
