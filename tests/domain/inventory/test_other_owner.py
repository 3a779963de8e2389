# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The rule that decides whether another owner holds a node's NVIDIA GPUs (DESIGN.md D16)."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.other_owner import (
    REASON_DEVICE_PLUGIN,
    REASON_GPU_OPERATOR,
    REASON_NODE_MANAGER,
    REASON_NONE,
    REASON_PROCESSES,
    card_owner,
    condition,
    is_gpu_resource,
    node_owner,
    plugin_resources,
    served_elsewhere,
)
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus


def node(allocatable: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "w1", "labels": labels or {}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", **(allocatable or {})}},
    }


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu.shared", True),  # time-slicing with renameByDefault
        ("nvidia.com/mig-1g.10gb", True),  # the mixed MIG strategy
        ("nvidia.com/mig-3g.40gb.shared", True),
        ("nvidia.com/rdma_shared_device_a", False),  # the network operator's NICs
        ("nvidia.com/sriov_cx7", False),
        ("example.com/gpu", False),
        ("gpu.deckhouse.io/a30", False),  # the module's own extended resource through DRA
    ],
)
def test_only_the_gpu_device_plugins_resources_count(name: str, gpu: bool) -> None:
    assert is_gpu_resource(name) is gpu


def test_allocatable_above_zero_holds_the_node_as_the_scheduler_reads_it() -> None:
    owner = node_owner(node({"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "7"}))
    assert owner is not None
    assert owner.reason == REASON_DEVICE_PLUGIN
    assert owner.resources == ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    assert "nvidia.com/gpu: 2" in owner.message
    assert "MIGRATION" in owner.message


def test_a_stopped_plugin_reported_at_zero_holds_nothing() -> None:
    # The kubelet keeps the resource at 0 allocatable after its plugin went (capacity follows
    # after its grace period); the scheduler then leaves the resource to DRA, and so do we.
    stopped = node({"nvidia.com/gpu": "0"})
    stopped["status"]["capacity"] = {"nvidia.com/gpu": "2"}
    assert node_owner(stopped) is None
    assert plugin_resources(stopped) == {}


def test_network_resources_and_garbage_hold_nothing() -> None:
    assert node_owner(node({"nvidia.com/rdma_shared_device_a": "63", "nvidia.com/gpu": "lots"})) is None
    assert node_owner(None) is None
    assert node_owner({}) is None


def test_node_manager_and_gpu_operator_labels_hold_through_a_plugin_restart() -> None:
    managed = node_owner(node(labels={"node.deckhouse.io/device-gpu.config": "MIG"}))
    assert managed is not None
    assert managed.reason == REASON_NODE_MANAGER
    assert "spec.gpu" in managed.message
    bare = node_owner(node(labels={"node.deckhouse.io/gpu": ""}))  # set with the config label
    assert bare is not None
    assert bare.reason == REASON_NODE_MANAGER
    assert "label node.deckhouse.io/gpu," in bare.message
    for value in ("true", "paused-for-mig-change"):
        operator = node_owner(node(labels={"nvidia.com/gpu.deploy.device-plugin": value}))
        assert operator is not None
        assert operator.reason == REASON_GPU_OPERATOR
    assert node_owner(node(labels={"nvidia.com/gpu.deploy.device-plugin": "false"})) is None
    assert node_owner(node(labels={"nvidia.com/gpu.present": "true"})) is None  # GPUs, no plugin


def test_resources_decide_before_labels() -> None:
    both = node({"nvidia.com/gpu": "1"}, {"node.deckhouse.io/device-gpu.config": "Exclusive"})
    owner = node_owner(both)
    assert owner is not None
    assert owner.reason == REASON_DEVICE_PLUGIN


def test_processes_hold_one_card_unless_a_claim_here_is_prepared_on_it() -> None:
    held = card_owner(None, (4242, 4243), prepared=False)
    assert held is not None
    assert held.reason == REASON_PROCESSES
    assert "4242, 4243" in held.message
    assert card_owner(None, (4242,), prepared=True) is None
    assert card_owner(None, (), prepared=False) is None
    assert card_owner(None, None, prepared=False) is None  # NVML could not tell
    plugin = node_owner(node({"nvidia.com/gpu": "1"}))
    assert card_owner(plugin, None, prepared=True) is plugin  # a node-level owner holds every card


def test_the_condition_says_who() -> None:
    assert condition(None)[:2] == (ConditionStatus.FALSE, REASON_NONE)
    owner = node_owner(node({"nvidia.com/gpu": "1"}))
    status, reason, message = condition(owner)
    assert (status, reason) == (ConditionStatus.TRUE, REASON_DEVICE_PLUGIN)
    assert message == owner.message  # type: ignore[union-attr]


def test_served_elsewhere_counts_one_resource() -> None:
    assert served_elsewhere(node({"example.com/gpu": "3"}), "example.com/gpu") == 3
    assert served_elsewhere(node(), "example.com/gpu") == 0
