# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers follow the DeviceClasses on a real API server (DESIGN.md D19).

gpu-handler's publisher, with the DeviceClass watch of its wiring (``follow_device_classes``), over
the client it uses in a pod, publishes a fake node's two H100s. A DeviceClass created, changed or
deleted changes the node's slices within the wait below; at each step the slices the server stores
hold exactly the devices that the classes the server holds then may select (the shared cluster may
hold other tests' classes too: they count, as they would in a real cluster), and the server
accepts every filtered pool.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.cmd.gpu_handler.wiring import follow_device_classes
from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.dropped_fields import CONSUMABLE, PARTITIONABLE
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher, node_policy
from deckhouse_gpu.services.runtime.events import EventRecorder
from testkit.gpu_objects import node_cards
from testkit.real_cluster import RealCluster
from tests.real.component_world import unique

DEVICE_CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
FOLLOW_SECONDS = 30  # generous for a busy machine; it takes about a second


def device_class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def test_offers_follow_device_classes_created_changed_and_deleted(real_cluster: RealCluster) -> None:
    cluster = real_cluster
    node = unique("oc-node")
    cluster.add_node(node)
    cards = node_cards(node, "h100-80gb", 2)
    uuids = ", ".join(f'"{c["status"]["currentState"]["nvidia"]["gpuUUID"]}"' for c in cards)
    mine = f'device.driver == "gpu.deckhouse.io" && device.attributes["gpu.deckhouse.io"].uuid in [{uuids}]'
    attribute = 'device.attributes["gpu.deckhouse.io"]'
    whole, mig = unique("oc-whole"), unique("oc-mig")
    cluster.create(device_class(whole, f'{mine} && {attribute}.deviceType == "Physical"'))
    api = load_kube(str(cluster.admin_kubeconfig))
    node_object = cluster.request("GET", f"/api/v1/nodes/{node}")
    publisher = SlicePublisher(
        api, node, EventRecorder(api, "gpu-handler", node, SystemClock()), PublisherSettings()
    )
    changed, stop = threading.Event(), threading.Event()

    def publish_on_change() -> None:
        while not stop.is_set():
            if changed.wait(0.2):
                changed.clear()
                publisher.publish(cards, node_object)

    follow_device_classes(api, publisher, lambda _old, _new: changed.set(), stop)
    worker = threading.Thread(target=publish_on_change, daemon=True)
    worker.start()
    changed.set()

    def expected() -> set[str]:
        demand = demand_of(cluster.request("GET", DEVICE_CLASSES)["items"])
        features = publisher.features
        policy = node_policy(node_object, features[PARTITIONABLE], features[CONSUMABLE])
        policy = dataclasses.replace(policy, demand=demand)
        return {offer.name for card in cards for offer in card_offers(card, policy).offers}

    def stored() -> set[str]:
        items = cluster.request("GET", f"{SLICES}?fieldSelector=spec.nodeName={node}")["items"]
        if not items or len(items) != items[0]["spec"]["pool"]["resourceSliceCount"]:
            return set()
        if len({item["spec"]["pool"]["generation"] for item in items}) != 1:
            return set()
        return {device["name"] for item in items for device in item["spec"].get("devices", [])}

    def follows(what: str, check: Any) -> set[str]:
        began = time.monotonic()
        found: set[str] = cluster.wait_for(
            lambda: (now := stored()) and now == expected() and check(now) and now, FOLLOW_SECONDS, what
        )
        print(f"{what}: {time.monotonic() - began:.1f} s")
        return found

    try:
        first = follows("whole cards only", lambda now: not any("-mig-" in name for name in now))
        assert {"gpu-0000-10-00-0", "gpu-0000-18-00-0"} <= first
        cluster.create(
            device_class(
                mig, f'{mine} && {attribute}.deviceType == "MIG" && {attribute}.migProfile == "3g.40gb"'
            )
        )
        grown = follows("3g.40gb added", lambda now: sum("-mig-3g-40gb-" in n for n in now) == 4)
        assert grown - first == {f"gpu-0000-{a}-00-0-mig-3g-40gb-{s}" for a in ("10", "18") for s in (0, 4)}
        changed_class = device_class(
            mig, f'{mine} && {attribute}.deviceType == "MIG" && {attribute}.migProfile == "1g.10gb"'
        )
        changed_class["metadata"]["resourceVersion"] = cluster.request("GET", f"{DEVICE_CLASSES}/{mig}")[
            "metadata"
        ]["resourceVersion"]
        cluster.request("PUT", f"{DEVICE_CLASSES}/{mig}", changed_class)
        follows("changed to 1g.10gb", lambda now: sum("-mig-1g-10gb-" in n for n in now) == 14)
        cluster.delete("resource.k8s.io/v1", "DeviceClass", mig)
        follows("MIG class deleted", lambda now: True)
    finally:
        stop.set()
        worker.join(5)
        cluster.delete("resource.k8s.io/v1", "DeviceClass", mig)
        cluster.delete("resource.k8s.io/v1", "DeviceClass", whole)
        cluster.request("DELETE", f"{SLICES}?fieldSelector=spec.nodeName={node}")
        cluster.delete("v1", "Node", node)
