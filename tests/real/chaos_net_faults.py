# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""chaos-real's faults of the network, the credentials and the Node (tests/real/chaos_real.py):

- ``watch-silent``: every connection open through the components' proxies goes silent for good
  (open, nothing forwarded either way), as behind a load balancer that lost its flows; new
  connections pass. Recovery runs from the silence: a watch notices it after
  ``WATCH_IDLE_SECONDS`` of nothing and opens again; a request on a silenced pooled connection
  waits out its read timeout (30 s) once.
- ``token-rotation``: every component's token file gets a token bound to a new object and the
  old object is deleted, so the API server refuses the old token at once (401); the tokens have
  the shortest expiry the server allows and are renewed at 80 % of their life all along
  (testkit/rotating_tokens.py). Recovery runs from the rotation.
- ``node-recreate``: the Node is deleted while claims are prepared on it; the garbage collector
  takes the node's PhysicalGPUs and ResourceSlices (their owner); 1-5 s later the Node is created
  anew (a new uid), as a kubelet registers its node again, and untainted once the kubelet reports
  it Ready, as the node lifecycle controller would (these clusters run without it). Recovery runs
  from the new Node until the cards and slices are back and owned by it (the next collection would
  take them otherwise); the claims prepared before stay prepared on the host and are unprepared
  later as usual.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from testkit.real_cluster import ApiError
from tests.real import component_world as world

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.real.chaos_real import ChaosRun


def watch_silent(run: ChaosRun, record: dict[str, Any]) -> None:
    record["silenced"] = {name: proxy.silence() for name, proxy in run.proxies.items()}
    record["_endedAt"] = time.monotonic()


def token_rotation(run: ChaosRun, record: dict[str, Any]) -> None:
    for account in list(run.tokens.held):
        run.tokens.rotate(account)
    record["rotated"] = len(run.tokens.held)
    record["_endedAt"] = time.monotonic()


def node_recreate(run: ChaosRun, record: dict[str, Any]) -> None:
    cluster, node = run.cluster, run.node
    # The fault is a Node deleted while claims are prepared on it: the stream's Pods Running first.
    run._wait(run.stream.settled, "the stream's Pods running before the Node is deleted")
    old = cluster.request("GET", f"/api/v1/nodes/{node}")
    old_uid = old["metadata"]["uid"]
    record["preparedClaims"] = len(run.gpu_node.checkpoint())
    cluster.request("DELETE", f"/api/v1/nodes/{node}")
    run._wait(lambda: not owned(run, old_uid), "the garbage collector took the node's cards and slices", 120)
    time.sleep(round(run.draw.uniform(1.0, 5.0), 2))
    try:
        new_uid = cluster.request("POST", "/api/v1/nodes", anew(old))["metadata"]["uid"]
    except ApiError as error:  # the kubelet may have registered it first
        if error.status != 409:
            raise
        new_uid = cluster.request("GET", f"/api/v1/nodes/{node}")["metadata"]["uid"]
    record["_endedAt"] = time.monotonic()
    # Without it the new Node keeps 1.36's not-ready taint and every later Pod stays Pending.
    run.gpu_node.kubelet.registered_again()
    run._wait(lambda: all_owned_by(run, new_uid), "the node's cards and slices owned by the new Node")


def anew(node: dict[str, Any]) -> dict[str, Any]:
    """The Node as its kubelet registers it again: the same name, labels and taints, a new uid; the
    kubelet, which keeps running, fills its status in."""
    meta = node["metadata"]
    kept = ("taints", "unschedulable")
    spec = {key: value for key, value in (node.get("spec") or {}).items() if key in kept}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": meta["name"], "labels": meta.get("labels") or {}},
        "spec": spec,
    }


def owned(run: ChaosRun, uid: str) -> list[str]:
    """The node's cards and slices whose owner is the Node of ``uid``."""
    return [item["metadata"]["name"] for item in node_objects(run) if uid in owner_uids(item)]


def all_owned_by(run: ChaosRun, uid: str) -> bool:
    """Both cards and all the node's slices there, each owned by the Node of ``uid`` alone."""
    items = node_objects(run)
    cards = [item for item in items if item["kind"] == "PhysicalGPU"]
    return (
        len(cards) == len(world.CARDS)
        and len(items) > len(cards)
        and all(owner_uids(item) == [uid] for item in items)
    )


def node_objects(run: ChaosRun) -> list[dict[str, Any]]:
    cards = run.cluster.request(
        "GET", f"{world.PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={run.node}"
    )["items"]
    slices = run.cluster.request("GET", f"{world.RESOURCE_SLICES}?fieldSelector=spec.nodeName={run.node}")[
        "items"
    ]
    return [{"kind": "PhysicalGPU", **c} for c in cards] + [{"kind": "ResourceSlice", **s} for s in slices]


def owner_uids(item: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in item["metadata"].get("ownerReferences") or () if ref.get("kind") == "Node"]


FAULTS: dict[str, Callable[[ChaosRun, dict[str, Any]], None]] = {
    "watch-silent": watch_silent,
    "token-rotation": token_rotation,
    "node-recreate": node_recreate,
}
