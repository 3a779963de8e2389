# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's view of the API: watch caches of this node's PhysicalGPUs, its Node and its
ResourceSlices, so that a pass (the heartbeat included) reads nothing from the API server.

Each watch selects this node alone, on what the API server indexes where it can: the Node by
``metadata.name``, the slices by ``spec.nodeName`` and ``spec.driver`` (as upstream's
ResourceSlice controller watches its own). The Node is watched whole: another owner of its cards
shows in its ``status.allocatable`` (DESIGN.md D16), and the kubelet, which renews its Lease
instead, writes that status only when it changes or every few minutes. PhysicalGPUs are a custom resource,
for which the server has no index: their label selector is evaluated per event, which their few
changes keep cheap. Someone else's change to a slice (an edit, a delete) wakes the loop, which
writes the slice back within the debounce; our own writes wake nobody (``OwnWrites``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_SLICES, KubeAPI, Object
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.own_writes import OwnWrites


class CacheListener(Protocol):
    def on_cached_card(self, old: Object | None, new: Object | None) -> None: ...
    def on_cached_node(self, old: Object | None, new: Object | None) -> None: ...
    def on_cached_slice(self, old: Object | None, new: Object | None) -> None: ...


OnChange = Callable[[Object | None, Object | None], None]


def slice_selector(node_name: str) -> str:
    """This node's slices of this driver: both fields are indexed by the API server's watch cache."""
    return f"spec.nodeName={node_name},spec.driver={DRIVER}"


class HandlerCaches:
    def __init__(
        self,
        api: KubeAPI,
        node_name: str,
        on_cards: OnChange,
        on_node: OnChange,
        on_slices: OnChange,
        watch_timeout_seconds: int = 300,
    ) -> None:
        self.node_name = node_name
        timeout = watch_timeout_seconds
        self.cards = Informer(
            api,
            PHYSICAL_GPUS,
            on_cards,
            label_selector=node_selector(node_name),
            watch_timeout_seconds=timeout,
        )
        self.node = Informer(
            api,
            NODES,
            on_node,
            field_selector=f"metadata.name={node_name}",
            watch_timeout_seconds=timeout,
        )
        self.slices = Informer(
            api,
            RESOURCE_SLICES,
            on_slices,
            field_selector=slice_selector(node_name),
            watch_timeout_seconds=timeout,
        )
        self.card_writes = OwnWrites(self.cards.items)
        self.slice_writes = OwnWrites(self.slices.items)

    def follow(self, loop: CacheListener) -> None:
        """Sends the caches' changes to the loop, our own writes checked off first."""
        self.cards.on_change = self.card_writes.observing(loop.on_cached_card)
        self.node.on_change = loop.on_cached_node
        self.slices.on_change = self.slice_writes.observing(loop.on_cached_slice)

    def informers(self) -> tuple[Informer, ...]:
        return (self.cards, self.node, self.slices)

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers())

    def node_object(self) -> Object | None:
        return self.node.get(self.node_name)

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        threads = [
            threading.Thread(
                target=informer.run, args=(stop,), name=f"watch-{informer.resource.plural}", daemon=True
            )
            for informer in self.informers()
        ]
        for thread in threads:
            thread.start()
        return threads
