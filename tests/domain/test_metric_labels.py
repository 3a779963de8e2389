# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node components' label values stay within their fixed lists."""

from __future__ import annotations

from deckhouse_gpu.domain.metric_labels import API_ERRORS, bounded, udev_action


def test_udev_actions_are_kept_lowercase_or_become_other():
    assert [udev_action(a) for a in ("add", "REMOVE", "unbind", "overflow", "weird", "")] == [
        "add",
        "remove",
        "unbind",
        "overflow",
        "other",
        "other",
    ]


def test_a_value_outside_its_list_is_other():
    assert bounded("Conflict", API_ERRORS) == "Conflict"
    assert bounded("ConnectionResetError", API_ERRORS) == "other"
