# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A GPU node's components send nothing on a timer and repair what they own.

On a real API server, behind a counting proxy each, a real gpu-node-agent (its safety rescan every
second) and a real gpu-handler (its NVML heartbeat twice a second) send no request at all once the
node is published, only the watches they opened, each selecting this node alone, with bookmarks.
Before issue 40 the handler listed its cards and slices and read its Node at every heartbeat, and
the agent listed at every rescan. A slice or a card deleted behind their backs comes back within
seconds, on the watch alone (issue 39 item 5).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from testkit.node_components import SimulatedNode, install_crd, requests_of, start_nodes, wait_quiet
from testkit.real_cluster import ApiError, RealCluster

WINDOW_SECONDS = 8.0  # sixteen heartbeats, eight rescans


@pytest.fixture
def node(real_cluster: RealCluster) -> Iterator[SimulatedNode]:
    install_crd(real_cluster)
    minor = real_cluster.version.replace(".", "")
    (started,) = start_nodes(real_cluster, 1, f"idle{minor}", heartbeat_seconds=0.5, resync_seconds=1.0)
    try:
        real_cluster.wait_for(lambda: len(started.slices()) > 0, 120, "the node's slices")
        yield started
    finally:
        started.stop()


def test_an_idle_node_sends_nothing_but_its_watches_and_repairs_what_it_owns(node: SimulatedNode) -> None:
    try:
        quiet_since = wait_quiet([node], quiet_seconds=3.0, timeout=90)
    except TimeoutError:
        pytest.fail(f"never idle: {node.records(time.monotonic() - 5)}\n{node.log('gpu-handler')}")
    time.sleep(WINDOW_SECONDS)
    for component, records in node.records(quiet_since).items():
        assert requests_of(records, lambda r: r.verb != "WATCH") == [], component
    watches = {
        component: [r for r in records if r.verb == "WATCH"] for component, records in node.records().items()
    }
    opened = [r for records in watches.values() for r in records]
    assert all(r.query.get("allowWatchBookmarks") == "true" for r in opened)
    # Each selects this node: by the indexed fields where the server has them, by label for the
    # PhysicalGPU custom resource (no index exists for custom resources). The DeviceClasses are the
    # cluster's, whole: offers follow them (DESIGN.md D19); a few objects that rarely change.
    selectors = sorted(
        {
            (r.path.rsplit("/", 1)[-1], r.query.get("fieldSelector") or r.query.get("labelSelector"))
            for r in opened
        }
    )
    assert selectors == [
        ("deviceclasses", None),
        ("nodes", f"metadata.name={node.name}"),
        ("physicalgpus", f"gpu.deckhouse.io/node={node.name}"),
        ("resourceslices", f"spec.nodeName={node.name},spec.driver=gpu.deckhouse.io"),
    ]
    # One watch per kind and component, none reopened within the run (they last 5-10 minutes).
    assert sorted((c, r.path.rsplit("/", 1)[-1]) for c, rs in watches.items() for r in rs) == [
        ("gpu-handler", "deviceclasses"),
        ("gpu-handler", "nodes"),
        ("gpu-handler", "physicalgpus"),
        ("gpu-handler", "resourceslices"),
        ("gpu-node-agent", "physicalgpus"),
    ]

    # Issue 39 item 5: each owner watches what it owns and writes it back within seconds, as
    # upstream's ResourceSlice controller does; the repair reads nothing (the caches hold it all).
    cluster = node.cluster
    repair_since = time.monotonic()
    (gone, *_) = node.slices()
    name = gone["metadata"]["name"]
    cluster.delete("resource.k8s.io/v1", "ResourceSlice", name)
    cluster.wait_for(lambda: name in {s["metadata"]["name"] for s in node.slices()}, 15, "the slice back")
    card = cluster.request(
        "GET",
        f"/apis/gpu.deckhouse.io/v1alpha1/physicalgpus?labelSelector=gpu.deckhouse.io/node%3D{node.name}",
    )["items"][0]
    card_name = card["metadata"]["name"]
    cluster.delete("gpu.deckhouse.io/v1alpha1", "PhysicalGPU", card_name)

    def recreated() -> bool:
        try:
            found = cluster.get("gpu.deckhouse.io/v1alpha1", "PhysicalGPU", card_name)
        except ApiError:
            return False
        return bool(found["metadata"]["uid"] != card["metadata"]["uid"])

    cluster.wait_for(recreated, 15, "the card created again")
    # Nothing listed; a GET only to re-read an object after a write conflict (409: the agent and the
    # handler both write a new card's status at once), never to find what to repair; and gpu-node-agent
    # reads its own Node once before it creates the card (the owner's uid: a Node created anew has a
    # new one, DESIGN.md D21).
    node_path = f"/api/v1/nodes/{node.name}"
    for component, records in node.records(repair_since).items():
        assert [r.path for r in records if r.verb == "LIST"] == [], component
        conflicts = sum(1 for r in records if r.status == 409)
        own_node = [r for r in records if r.verb == "GET" and r.path == node_path]
        assert len(own_node) <= (1 if component == "gpu-node-agent" else 0), (component, records)
        others = sum(1 for r in records if r.verb == "GET" and r.path != node_path)
        assert others <= conflicts, (component, records)
