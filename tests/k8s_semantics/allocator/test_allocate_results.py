# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What an allocation writes: the results, the node selector and the class and claim config
(KUBERNETES-FACTS.md F3, F4)."""

from __future__ import annotations

from tests.k8s_semantics.allocator.small_slices import gpus
from tests.support.allocation import IS_GPU, World, claim_object, device_class, exactly, resource_slice


def test_the_result_pins_the_node_and_carries_class_then_claim_config() -> None:
    opaque = {"opaque": {"driver": "gpu.deckhouse.io", "parameters": {"kind": "GpuConfig"}}}
    mine = {"opaque": {"driver": "gpu.deckhouse.io", "parameters": {"kind": "Mine"}}}
    other = {"requests": ["nope"], "opaque": {"driver": "x", "parameters": {}}}
    world = World([resource_slice("s", gpus("a"))], [device_class("gpu", IS_GPU, config=[opaque])])
    outcome = world.allocate(claim_object("c", exactly("gpu"), config=[mine, other]))
    assert outcome.allocations == [
        {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.deckhouse.io", "pool": "p1", "device": "a"}],
                "config": [
                    {"source": "FromClass", "requests": ["gpu"], **opaque},
                    {"source": "FromClaim", **mine},
                ],
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        }
    ]


def test_devices_available_everywhere_need_no_node_selector() -> None:
    world = World([resource_slice("s", gpus("a"), node=None, allNodes=True)])
    outcome = world.allocate(claim_object("c", exactly("gpu")))
    assert outcome.allocations is not None
    assert "nodeSelector" not in outcome.allocations[0]
