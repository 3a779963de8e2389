# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Health as device taints through gpu-handler's loop: a card NVML loses keeps its offers, tainted,
while the API server keeps taints (DRADeviceTaints on); where it drops them the card's offers are
withdrawn, said once in an Event and in the fallback metric; recovery undoes either."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.ports.kube import EVENTS, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings
from deckhouse_gpu.simulator.api.feature_gates import gates_off
from tests.services.publishing.test_handler_metrics import Node
from tests.support.allocation import World, claim_object, device_class, exactly

LOST, OTHER = "0000:18:00.0", "0000:10:00.0"
TAINT = {"key": "gpu.deckhouse.io/unhealthy", "value": "GPULost", "effect": "NoExecute"}


def devices(node: Node) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for s in node.kube.list(RESOURCE_SLICES).items for d in s["spec"].get("devices", [])}


def of_card(found: dict[str, dict[str, Any]], address: str) -> list[dict[str, Any]]:
    return [d for d in found.values() if d["attributes"]["pciAddress"]["string"] == address]


def warnings(node: Node) -> list[dict[str, Any]]:
    events = node.kube.list(EVENTS, namespace="default").items
    return [e for e in events if e["reason"] == "DRAFeatureUnavailable"]


def lose_card(node: Node) -> None:
    node.nvml.fail_device(LOST, "GPU is lost")
    assert node.loop._pass([]).ok  # no grace in these settings: HardwareHealthy turns Unknown now


def whole_card_of(address: str | None, **request: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim for one whole card (of ``address``) and its class, as the scheduler sees them."""
    cel = 'device.attributes["gpu.deckhouse.io"].deviceType == "Physical"'
    if address:
        cel += f' && device.attributes["gpu.deckhouse.io"].pciAddress == "{address}"'
    return claim_object("c", exactly("gpu", **request)), device_class("gpu", cel)


def allocate(node: Node, address: str | None, **request: Any) -> list[str] | None:
    claim, klass = whole_card_of(address, **request)
    world = World(node.kube.list(RESOURCE_SLICES).items, [klass])
    outcome = world.allocate(claim, node="w1")
    assert outcome.error is None, outcome.error
    return (
        None
        if outcome.allocations is None
        else [r["device"] for r in outcome.allocations[0]["devices"]["results"]]
    )


def test_a_lost_card_stays_offered_tainted_until_it_recovers(clock):
    node = Node(clock)
    assert node.loop._pass([]).ok
    healthy = devices(node)
    per_card = len(of_card(healthy, LOST))
    assert per_card > 1
    assert len(healthy) == 2 * per_card
    assert not any("taints" in d for d in healthy.values())
    lose_card(node)
    found = devices(node)
    assert sorted(found) == sorted(healthy)  # every offer kept: Physical and MIG
    lost = of_card(found, LOST)
    assert len(lost) == per_card
    for entry in lost:
        (taint,) = entry["taints"]
        assert {k: v for k, v in taint.items() if k != "timeAdded"} == TAINT
        assert taint["timeAdded"].endswith("Z")  # set by the API server, not sent
    assert not any("taints" in d for d in of_card(found, OTHER))
    assert node.value("dra_feature_fallback", feature="DRADeviceTaints") == 0
    # The next passes write nothing: the stored time is carried over, so the taint compares equal.
    writes = node.value("api_writes_total", resource="ResourceSlice")
    assert node.loop._pass([]).ok
    assert node.loop._pass([]).ok
    assert node.value("api_writes_total", resource="ResourceSlice") == writes
    assert devices(node) == found
    node.nvml.clear_failures()
    clock.ticks += 600  # past the failing card's retry backoff
    assert node.loop._pass([]).ok
    assert devices(node) == healthy  # untainted again
    assert warnings(node) == []


def test_the_scheduler_semantics_keep_claims_off_a_tainted_card_unless_they_tolerate_it(clock):
    node = Node(clock)
    lose_card(node)
    assert allocate(node, LOST) is None
    assert allocate(node, None) == ["gpu-0000-10-00-0"]  # the healthy card
    exists = {"key": TAINT["key"], "operator": "Exists"}
    assert allocate(node, LOST, tolerations=[exists]) == ["gpu-0000-18-00-0"]
    assert allocate(node, LOST, tolerations=[{**exists, "effect": "NoSchedule"}]) is None  # NoExecute
    equal = {"key": TAINT["key"], "operator": "Equal", "value": "GPULost", "effect": "NoExecute"}
    assert allocate(node, LOST, tolerations=[equal]) == ["gpu-0000-18-00-0"]
    assert allocate(node, LOST, tolerations=[{**equal, "value": "NVMLQueryFailed"}]) is None


def test_where_the_server_drops_taints_the_card_is_withdrawn_and_said_once(clock):
    node = Node(clock)
    node.kube.drop_fields = gates_off(taints=True)
    assert node.loop._pass([]).ok
    per_card = len(of_card(devices(node), LOST))
    assert per_card > 1
    assert len(devices(node)) == 2 * per_card
    lose_card(node)
    found = devices(node)
    assert of_card(found, LOST) == []
    assert len(of_card(found, OTHER)) == per_card
    (warning,) = warnings(node)
    assert warning["type"] == "Warning"
    assert warning["involvedObject"]["kind"] == "Node"
    assert "DRADeviceTaints" in warning["message"]
    assert "withdraws the offers of an unhealthy card" in warning["message"]
    assert node.value("dra_feature_fallback", feature="DRADeviceTaints") == 1
    assert node.value("dra_feature_fallback", feature="DRAPartitionableDevices") == 0
    writes = node.value("api_writes_total", resource="ResourceSlice")
    assert node.loop._pass([]).ok
    assert node.value("api_writes_total", resource="ResourceSlice") == writes  # no loop
    assert len(warnings(node)) == 1
    node.nvml.clear_failures()
    clock.ticks += 600
    assert node.loop._pass([]).ok
    assert len(of_card(devices(node), LOST)) == per_card  # offered again, untainted
    assert not any("taints" in d for d in devices(node).values())
    assert len(warnings(node)) == 1
    assert node.value("dra_feature_fallback", feature="DRADeviceTaints") == 1  # until a restart


def test_taints_switched_off_withdraw_the_card_without_a_fallback(clock):
    node = Node(clock, PublisherSettings(taints="off"))
    lose_card(node)
    assert of_card(devices(node), LOST) == []
    assert warnings(node) == []
    assert node.value("dra_feature_fallback", feature="DRADeviceTaints") == 0


def test_taints_forced_on_are_kept_sending_even_when_dropped(clock):
    node = Node(clock, PublisherSettings(taints="on"))
    node.kube.drop_fields = gates_off(taints=True)
    assert node.loop._pass([]).ok
    per_card = len(of_card(devices(node), LOST))
    lose_card(node)
    # What "on" means: the operator says the gate is on; a server that drops taints anyway leaves
    # the card offered untainted, and gpu-handler logs an error instead of giving the feature up.
    assert len(of_card(devices(node), LOST)) == per_card
    assert warnings(node) == []
    assert node.value("dra_feature_fallback", feature="DRADeviceTaints") == 0
