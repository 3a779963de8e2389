# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from typing import Any

from deckhouse_gpu.domain.offers.dropped_fields import CONSUMABLE, PARTITIONABLE, dropped_features

SENT: dict[str, Any] = {
    "spec": {
        "sharedCounters": [{"name": "gpu-a", "counters": {"memory": {"value": "1Mi"}}}],
        "devices": [
            {"name": "a", "consumesCounters": [{"counterSet": "gpu-a", "counters": {}}]},
            {
                "name": "b",
                "allowMultipleAllocations": True,
                "capacity": {"sharePercent": {"value": "100", "requestPolicy": {}}},
            },
        ],
    }
}


def test_nothing_dropped():
    assert dropped_features(SENT, SENT) == set()


def test_partitionable_fields_dropped():
    stored = {"spec": {"devices": [{"name": "a"}, SENT["spec"]["devices"][1]]}}
    assert dropped_features(SENT, stored) == {PARTITIONABLE}


def test_consumable_fields_dropped():
    stored = {
        "spec": {
            **SENT["spec"],
            "devices": [
                SENT["spec"]["devices"][0],
                {"name": "b", "capacity": {"sharePercent": {"value": "100"}}},
            ],
        }
    }
    assert dropped_features(SENT, stored) == {CONSUMABLE}


def test_a_plain_slice_never_counts_as_dropped():
    plain = {"spec": {"devices": [{"name": "a"}]}}
    assert dropped_features(plain, {"spec": {}}) == set()
