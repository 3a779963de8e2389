# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""dra.migOffers as gpu-handler applies it: with AllNodes every MIG-capable node offers dynamic
MIG unless labelled gpu.deckhouse.io/mig=false; with OptIn only nodes labelled
gpu.deckhouse.io/mig=true do, and every other node offers whole cards without counters, which
is what keeps a 1.35/1.36 scheduler's cost per Pod near plain at scale."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import NODES, RESOURCE_SLICES
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.services.publishing.slice_publisher import MigOffers, PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import node_cards


def offered(slices: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(whole cards, MIG devices, counter sets) in the slices."""
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    mig = sum(1 for d in devices if "migProfile" in d["attributes"])
    sets = sum(len(s["spec"].get("sharedCounters") or []) for s in slices)
    return len(devices) - mig, mig, sets


@pytest.mark.parametrize(
    ("mode", "label", "dynamic_mig"),
    [
        ("AllNodes", None, True),
        ("AllNodes", "true", True),
        ("AllNodes", "false", False),
        ("OptIn", None, False),
        ("OptIn", "false", False),
        ("OptIn", "true", True),
    ],
)
def test_which_nodes_offer_dynamic_mig(mode: MigOffers, label: str | None, dynamic_mig: bool) -> None:
    labels = {} if label is None else {"gpu.deckhouse.io/mig": label}
    slices = render_nodes(node_cards("w1", "h100-80gb", 2), 35, labels, True, True, mig_offers=mode)
    whole, mig, sets = offered(slices)
    assert whole == 2
    assert (mig > 0, sets > 0) == (dynamic_mig, dynamic_mig)
    assert validate_pool(slices, 35) == []


def test_labelling_a_node_under_opt_in_republishes_it_with_mig(clock) -> None:
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": "w1", "uid": "u1", "labels": {}}})
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    publisher = SlicePublisher(api, "w1", events, PublisherSettings(mig_offers="OptIn"))
    cards = node_cards("w1", "h100-80gb", 2)
    publisher.publish(cards, api.get(NODES, "w1"))
    assert offered(api.list(RESOURCE_SLICES).items)[1:] == (0, 0)
    api.patch(NODES, "w1", {"metadata": {"labels": {"gpu.deckhouse.io/mig": "true"}}})
    publisher.publish(cards, api.get(NODES, "w1"))
    _, mig, sets = offered(api.list(RESOURCE_SLICES).items)
    assert mig > 0
    assert sets == 2
    assert validate_pool(api.list(RESOURCE_SLICES).items, 35) == []
