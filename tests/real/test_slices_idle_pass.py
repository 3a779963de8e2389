# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A second pass of gpu-handler's publisher writes nothing, on the real API server, for every
layout the module can publish: every card kind (MIG-capable with whole and non-whole GiB, no
MIG, an administrator's vfio-pci card, a card a VFIO claim holds), whole cards, MIG, sharing,
with and without partitionable devices and consumable capacity, an unhealthy card tainted or
withdrawn, MIG profile rules, the Node as owner, on each Kubernetes version of the tier.

The publisher writes only when the stored slices differ from what it renders; whatever the server
does to a slice (drops an empty map such as a VFIO card's ``"capacity": {}``, spells a quantity
its own way, defaults a field) must not read as a difference, or every idle pass of every node
rewrites its slices (issue 40: one PATCH a minute per node with a VFIO card).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.domain.offers.card_offers import ActiveMode
from deckhouse_gpu.domain.offers.mig_profile_policy import parse_json
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES, NotFound
from deckhouse_gpu.services.publishing.node_caches import slice_selector
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from testkit.gpu_objects import ready_card
from testkit.real_cluster import RealCluster

HELD = "0000:40:00.0"  # the card a VFIO claim holds


def _on_vfio_pci(card: dict[str, Any], known_before: bool) -> dict[str, Any]:
    """The card as its PhysicalGPU reads once the agent saw vfio-pci and the handler gated it."""
    status = card["status"]
    status["currentState"] = {"driverType": "VFIO", "driverName": "vfio-pci"}
    status["conditions"][1].update(status="Unknown", reason="DriverTypeNotNvidia")
    if not known_before:
        del status["capabilities"]  # an administrator's card, never on nvidia while the module ran
    return card


def cards(node: str, unhealthy: bool) -> list[dict[str, Any]]:
    """Every kind of card one node can have."""
    return [
        ready_card(node, "0000:10:00.0", "a30"),  # MIG, a whole number of GiB
        ready_card(node, "0000:18:00.0", "h100-80gb", healthy=not unhealthy),  # MIG, not whole GiB
        ready_card(node, "0000:20:00.0", "t4"),  # no MIG
        _on_vfio_pci(ready_card(node, "0000:30:00.0", "a100-40gb"), known_before=False),
        _on_vfio_pci(ready_card(node, HELD, "a100-40gb"), known_before=True),
    ]


PROFILES = parse_json('[{"device": "a30-pcie", "profiles": ["1g.6gb", "2g.12gb"]}]')
# name: (node labels, publisher settings, one card unhealthy)
LAYOUTS: dict[str, tuple[Mapping[str, str], PublisherSettings, bool]] = {
    "mig": ({}, PublisherSettings(), False),
    "whole": ({"gpu.deckhouse.io/mig": "false"}, PublisherSettings(), False),
    "sharing": ({"gpu.deckhouse.io/sharing": "true"}, PublisherSettings(), False),
    "sharing-no-consumable": (
        {"gpu.deckhouse.io/sharing": "true"},
        PublisherSettings(consumable="off"),
        False,
    ),
    "no-partitionable": ({}, PublisherSettings(partitionable="off"), False),
    "tainted": ({}, PublisherSettings(), True),
    "withdrawn": ({}, PublisherSettings(taints="off"), True),
    "mig-profiles": ({}, PublisherSettings(mig_profiles=PROFILES), False),
    "mig-opt-in": ({"gpu.deckhouse.io/mig": "true"}, PublisherSettings(mig_offers="OptIn"), False),
}
_names = itertools.count()


@pytest.fixture
def api(real_cluster: RealCluster) -> Iterator[ClientKube]:
    kube = load_kube(str(real_cluster.admin_kubeconfig))
    yield kube
    kube.close()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_second_pass_writes_nothing(real_cluster: RealCluster, api: ClientKube, layout: str) -> None:
    labels, settings, unhealthy = LAYOUTS[layout]
    node = f"idle-{layout}-{next(_names)}"
    real_cluster.add_node(node, labels)
    publisher = SlicePublisher(api, node, EventRecorder(api, "gpu-handler", node, SystemClock()), settings)
    active: dict[str, ActiveMode] = {HELD: "VFIO"}
    try:
        first = publisher.publish(cards(node, unhealthy), api.get(NODES, node), active)
        assert first.writes > 0
        assert first.fallback == []  # every version of the tier keeps the features it renders
        stored = api.list(RESOURCE_SLICES, field_selector=slice_selector(node)).items
        assert len(stored) == first.slices
        second = publisher.publish(cards(node, unhealthy), api.get(NODES, node), active)
        assert second.writes == 0, [s["metadata"]["name"] for s in stored]
        after = api.list(RESOURCE_SLICES, field_selector=slice_selector(node)).items
        assert [s["metadata"]["resourceVersion"] for s in after] == [
            s["metadata"]["resourceVersion"] for s in stored
        ]
    finally:
        real_cluster.delete("v1", "Node", node)  # its slices go with it (owner references)
        for item in api.list(RESOURCE_SLICES, field_selector=slice_selector(node)).items:
            # The controller-manager's garbage collector, where another test started it, may be first.
            with contextlib.suppress(NotFound):
                api.delete(RESOURCE_SLICES, item["metadata"]["name"])
