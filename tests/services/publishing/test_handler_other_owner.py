# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler keeps its hands off cards another owner holds (DESIGN.md D16): no offers, the
``OtherOwner`` condition, one Event per change, the metric; offers come back when the owner goes,
and a second idle pass writes nothing. Prepare refuses new claims on a held card and leaves the
prepared ones alone."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.other_owner import OTHER_OWNER
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, RESOURCE_SLICES, WatchEvent
from deckhouse_gpu.services.publishing.other_owner import OwnerBoard
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.trigger_loop import Trigger
from deckhouse_gpu.simulator.host.sim_vfio import SimGpuProcesses
from testkit.prepare_world import allocate, build_world
from tests.services.publishing.test_handler_metrics import Node

BUSY, OTHER = "0000:18:00.0", "0000:10:00.0"
PLUGIN = {"status": {"allocatable": {"nvidia.com/gpu": "2"}, "capacity": {"nvidia.com/gpu": "2"}}}
STOPPED = {"status": {"allocatable": {"nvidia.com/gpu": "0"}, "capacity": {"nvidia.com/gpu": "2"}}}


def owned(clock: Any, prepared: list[str] | None = None) -> Node:
    node = Node(clock)
    events = EventRecorder(node.kube, "gpu-handler", "w1", clock)
    written = node.loop.capabilities.written_versions.append
    node.loop.owners = OwnerBoard(
        node.kube, "w1", events, clock, SimGpuProcesses(node.nvml), node.metrics, written
    )
    node.loop.prepared_claims = lambda: list(prepared or [])
    return node


def offered_cards(node: Node) -> set[str]:
    return {
        d["attributes"]["pciAddress"]["string"]
        for s in node.kube.list(RESOURCE_SLICES).items
        for d in s["spec"].get("devices", [])
    }


def owner_conditions(node: Node) -> dict[str, tuple[str, str]]:
    found = {}
    for card in node.kube.list(PHYSICAL_GPUS).items:
        cond = conditions.find(card["status"].get("conditions"), OTHER_OWNER)
        assert cond is not None, card["metadata"]["name"]
        found[card["status"]["pciInfo"]["address"]] = (cond["status"], cond["reason"])
    return found


def owner_events(node: Node) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in node.kube.list(EVENTS, namespace="default").items
        if e["reason"].startswith("OtherGPUOwner")
    ]


def set_node(node: Node, patch: dict[str, Any]) -> WatchEvent:
    stored = node.kube.patch(NODES, "w1", patch, subresource="status" if "status" in patch else None)
    return WatchEvent("MODIFIED", stored)


def test_a_device_plugin_node_offers_nothing_says_why_and_gets_its_offers_back(clock):
    node = owned(clock, prepared=["ns/old-claim"])
    set_node(node, PLUGIN)
    assert node.loop._pass([]).ok
    assert offered_cards(node) == set()
    assert node.kube.list(RESOURCE_SLICES).items == []
    assert owner_conditions(node) == {BUSY: ("True", "DevicePlugin"), OTHER: ("True", "DevicePlugin")}
    ((kind, reason, message),) = owner_events(node)
    assert (kind, reason) == ("Warning", "OtherGPUOwner")
    assert "nvidia.com/gpu: 2" in message
    assert "ns/old-claim" in message
    assert node.value("cards_held_by_other_owner", reason="DevicePlugin") == 2
    assert node.value("cards_held_by_other_owner", reason="GPUOperator") == 0
    assert node.loop.owners is not None
    assert set(node.loop.owners.held()) == {BUSY, OTHER}

    writes = node.value("api_writes_total", resource="PhysicalGPU")
    assert node.loop._pass([]).ok  # idle: nothing written, nothing said again
    assert node.value("api_writes_total", resource="PhysicalGPU") == writes
    assert len(owner_events(node)) == 1

    set_node(node, STOPPED)  # the plugin went: the kubelet reports 0 allocatable at once
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {BUSY, OTHER}
    assert owner_conditions(node) == {BUSY: ("False", "NoOtherOwner"), OTHER: ("False", "NoOtherOwner")}
    assert sorted(e[:2] for e in owner_events(node)) == [
        ("Normal", "OtherGPUOwnerGone"),
        ("Warning", "OtherGPUOwner"),
    ]
    assert node.value("cards_held_by_other_owner", reason="DevicePlugin") == 0
    assert node.loop.owners.held() == {}


def test_a_node_that_never_had_another_owner_says_nothing(clock):
    node = owned(clock)
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {BUSY, OTHER}
    assert owner_conditions(node) == {BUSY: ("False", "NoOtherOwner"), OTHER: ("False", "NoOtherOwner")}
    assert owner_events(node) == []


def test_node_manager_and_gpu_operator_labels_hold_the_node(clock):
    node = owned(clock)
    set_node(node, {"metadata": {"labels": {"node.deckhouse.io/device-gpu.config": "TimeSlicing"}}})
    assert node.loop._pass([]).ok
    assert offered_cards(node) == set()
    assert owner_conditions(node)[BUSY] == ("True", "NodeManagerGPU")
    set_node(node, {"metadata": {"labels": {"node.deckhouse.io/device-gpu.config": None}}})
    set_node(node, {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "true"}}})
    assert node.loop._pass([]).ok
    assert offered_cards(node) == set()
    assert owner_conditions(node)[OTHER] == ("True", "GPUOperator")
    set_node(node, {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "false"}}})
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {BUSY, OTHER}
    reasons = sorted(e[1] for e in owner_events(node))  # Event names are random: no order
    assert reasons == ["OtherGPUOwner", "OtherGPUOwner", "OtherGPUOwnerGone"]


def test_processes_outside_dra_hold_only_their_card(clock):
    node = owned(clock)
    node.nvml.set_busy(BUSY, True, (4242,))
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {OTHER}
    assert owner_conditions(node) == {BUSY: ("True", "ForeignProcesses"), OTHER: ("False", "NoOtherOwner")}
    assert node.value("cards_held_by_other_owner", reason="ForeignProcesses") == 1
    assert owner_events(node) == []  # a card's processes are its condition's business, not the Node's
    node.loop.follow_modes({BUSY: "Physical"})  # a claim of this node prepared on it: its processes are ours
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {BUSY, OTHER}
    node.loop.follow_modes({})
    node.nvml.set_busy(BUSY, False)
    assert node.loop._pass([]).ok
    assert offered_cards(node) == {BUSY, OTHER}


def test_the_node_watch_wakes_the_loop_for_owner_changes_only(clock):
    node = owned(clock)
    woken: list[Trigger] = []
    node.loop.notify = woken.append  # type: ignore[method-assign,assignment]
    node.loop.on_node_change(set_node(node, {"status": {"allocatable": {"cpu": "8"}}}))
    assert len(woken) == 1  # the first event sets what the loop knows
    node.loop.on_node_change(
        set_node(node, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    )
    assert len(woken) == 1  # a kubelet heartbeat changes nothing that matters
    node.loop.on_node_change(set_node(node, PLUGIN))
    node.loop.on_node_change(set_node(node, STOPPED))
    assert len(woken) == 3
    node.loop.on_node_change(None)  # a relist: check everything
    assert len(woken) == 4


A30 = "0000:17:00.0"


def test_prepare_refuses_a_held_card_and_keeps_what_was_prepared(tmp_path):
    world = build_world(tmp_path, {A30: "a30"})
    service = world.service()
    first = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", first["metadata"]["uid"], "c1")
    assert service.prepare([ref])[ref.uid].error == ""
    assert service.claim_names == ["ns/c1"]
    held = {A30: "a device plugin serves this node's GPUs"}
    service.holds = lambda: held
    again = service.prepare([ref])[ref.uid]  # the kubelet's retry of a prepared claim: unchanged
    assert again.error == ""
    assert again.devices
    assert service.unprepare([ref]) == {ref.uid: ""}
    second = allocate(world.api, "c2", "gpu-0000-17-00-0")
    new = ClaimRef("ns", second["metadata"]["uid"], "c2")
    error = service.prepare([new])[new.uid].error
    assert "held by another owner" in error
    assert "device plugin" in error
    assert service.claim_names == []
    held.clear()
    assert service.prepare([new])[new.uid].error == ""


def test_start_leaves_another_owners_mig_instances_alone(tmp_path):
    # A MIG manager partitioned the card for the device plugin's Pods: gpu-handler's clean-up of
    # instances no claim owns must not take them (cmd/gpu_handler/main.py primes the holds before it).
    world = build_world(tmp_path, {A30: "a30"})
    world.mig.set_mig_mode(A30, True)
    theirs = world.mig.create_instance(A30, 14, 3)
    held = world.service()
    clock = SystemClock()
    board = OwnerBoard(world.api, "w1", EventRecorder(world.api, "gpu-handler", "w1", clock), clock)
    node = {"metadata": {"name": "w1"}, "status": {"allocatable": {"nvidia.com/mig-1g.6gb": "4"}}}
    board.prime([{"status": {"pciInfo": {"address": A30}}}], node)
    held.holds = board.held
    held.start()
    assert [i.uuid for i in world.mig.instances(A30)] == [theirs.uuid]
    assert world.mig.mig_enabled(A30)
    board.prime([{"status": {"pciInfo": {"address": A30}}}], {"metadata": {"name": "w1"}})  # migrated
    held.start()
    assert world.mig.instances(A30) == []


def test_a_pass_reads_the_node_from_the_watch_not_the_api(clock):
    # Passes come on every trigger and heartbeat: the Node the watch delivered is used, so the
    # node's handler does not GET its Node each time (a relist reads it once more).
    node = owned(clock)
    node.loop.notify = lambda trigger: None  # type: ignore[method-assign]
    node.loop.on_node_change(set_node(node, PLUGIN))
    gets = []
    real_get = node.kube.get

    def counting_get(resource: Any, name: str, namespace: str | None = None) -> Any:
        gets.append(resource.kind)
        return real_get(resource, name, namespace)

    node.kube.get = counting_get  # type: ignore[method-assign]
    assert node.loop._pass([]).ok
    assert offered_cards(node) == set()  # the watched Node's plugin holds the cards
    assert "Node" not in gets
    node.loop.on_node_change(None)  # relisted: the next pass reads the Node
    assert node.loop._pass([]).ok
    assert gets.count("Node") == 1
