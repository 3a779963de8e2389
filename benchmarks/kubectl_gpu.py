# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu capacity`` on the allocator benchmark's snapshot: 500 nodes with 8 H100 cards
each (1.35 layout, a Physical and 25 MIG offers per card: 104,000 devices), every DeviceClass of
docs/examples (41), and 0 %, 50 % or 90 % of the cards taken by claims.

The figure is the command's work once the lists are in memory (``services.gpu_report.capacity``
over the KubeAPI port, with the cycle collector off as in the command): parsing the slices,
grouping devices for the selectors, and counting per node and class with the allocator; the
target is under 2 s. Decoding the list responses (orjson, as the client does:
``adapters.kube_json``) is reported apart; the network is not measured.
"""

from __future__ import annotations

import gc
import json
import time
from typing import Any

from benchmarks.allocator import NODES, TOKEN
from benchmarks.common import line
from deckhouse_gpu.adapters.kube.kube_json import decode
from deckhouse_gpu.domain.naming import physical_name
from deckhouse_gpu.domain.offers.slice_layout import pool_name
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import NODES as NODE_KIND
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, RESOURCE_SLICES, ObjectList, Resource
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.services.report import gpu_report
from testkit.gpu_cluster import example_classes
from testkit.gpu_objects import node_cards

CARDS = 8


class Listed:
    """A KubeAPI that answers lists from memory, without copies: only the command's work counts."""

    def __init__(self, objects: dict[Resource, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def server_version(self) -> tuple[int, int]:
        return (1, 35)

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> ObjectList:
        return ObjectList(self.objects.get(resource, []), "1")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"kubectl gpu capacity called {name}: it only lists")


def snapshot() -> tuple[list[str], list[dict[str, Any]], list[str]]:
    cards = node_cards(TOKEN, "h100-80gb", CARDS)
    template = json.dumps(render_nodes(cards, 35, {}, True, True))
    nodes = [f"gpu-{index:03d}" for index in range(NODES)]
    slices = [s for node in nodes for s in json.loads(template.replace(TOKEN, node))]
    return nodes, slices, [card["status"]["pciInfo"]["address"] for card in cards]


def claims(fraction: float, nodes: list[str], addresses: list[str]) -> list[dict[str, Any]]:
    """A claim holding each taken card, spread evenly over the cluster (as the allocator benchmark)."""
    found, index = [], 0
    for node in nodes:
        for address in addresses:
            index += 1
            if (index * 37) % 100 >= fraction * 100:
                continue
            result = {
                "request": "gpu",
                "driver": "gpu.deckhouse.io",
                "pool": pool_name(node),
                "device": physical_name(address),
            }
            found.append(
                {
                    "metadata": {"namespace": "bench", "name": f"c-{index}"},
                    "status": {"allocation": {"devices": {"results": [result]}}},
                }
            )
    return found


def run() -> None:
    print(
        f"kubectl gpu capacity ({NODES} nodes x {CARDS} H100, 1.35 layout, the classes of docs/examples; "
        "target < 2 s)"
    )
    nodes, slices, addresses = snapshot()
    body = json.dumps({"items": slices}).encode()
    gc.collect()
    gc.disable()
    began = time.perf_counter()
    decode(body)
    decoded = time.perf_counter() - began
    gc.enable()
    line(f"decoding the ResourceSlice list ({len(body) >> 20} MiB of JSON)", decoded, "s", 2)
    node_objects = [{"metadata": {"name": node}} for node in nodes]
    classes = example_classes()
    for fraction in (0.0, 0.5, 0.9):
        api = Listed(
            {
                RESOURCE_SLICES: slices,
                RESOURCE_CLAIMS: claims(fraction, nodes, addresses),
                DEVICE_CLASSES: classes,
                NODE_KIND: node_objects,
            }
        )
        gc.collect()
        gc.disable()  # as the command runs
        try:
            began = time.perf_counter()
            build_inventory(slices)
            parsed = time.perf_counter() - began
            began = time.perf_counter()
            report = gpu_report.capacity(api)
            seconds = time.perf_counter() - began
        finally:
            gc.enable()
        fits = sum(entry.total for entry in report.classes)
        taken = f"{int(fraction * 100):>2} % taken"
        line(f"capacity, {taken}: whole command after the lists", seconds, f"s ({fits} claims fit)", 2)
        line(f"  of which parsing the slices (measured apart, {taken})", parsed, "s", 2)
