# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-controller's event loop: watches, a per-node work queue, workers and a safety resync.

Watches on PhysicalGPUs, the validator Pods and Nodes map every change to the node it
concerns; the node is queued after a short debounce, so a burst of pod updates makes one
pass over that node's cards only (an earlier implementation watched no pods and waited for the next
Node update). A slow resync queues every node again in case a change was missed.
Workers reconcile only while this replica leads; keys that arrive meanwhile are dropped,
and every node is queued when leadership is gained.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from deckhouse_gpu.domain.inventory.conditions import find
from deckhouse_gpu.domain.inventory.driver_ready import (
    card_node,
    pod_node,
    validated_by_nvidia_validator,
)
from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import NODE_METADATA, PHYSICAL_GPUS, KubeAPI, Object
from deckhouse_gpu.services.inventory.driver_ready_reconciler import ERROR, DriverReadyReconciler
from deckhouse_gpu.services.inventory.driver_ready_writer import DriverReadyWriter
from deckhouse_gpu.services.runtime.controller_runtime import ControllerRuntime, RuntimeProbes
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.leader_election import Leadership
from deckhouse_gpu.services.runtime.work_queue import WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerSettings:
    namespace: str = "d8-gpu"  # where the validator pods (and the lease) live
    validator_selector: str = "app=nvidia-driver-validator"
    debounce_seconds: float = 0.2
    resync_seconds: float = 300.0
    workers: int = 2
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 60.0
    watch_timeout_seconds: int = 300
    unhealthy_after_seconds: float = 300.0


class ReconcileObserver(Protocol):
    def observe_reconcile(self, result: str, seconds: float) -> None: ...


def _metadata_only(node: Object) -> Object:
    """Nodes are big and only their existence matters here: keep the cache small."""
    meta = node.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}}


class GpuController(RuntimeProbes):
    def __init__(
        self,
        api: KubeAPI,
        settings: ControllerSettings,
        leadership: Leadership,
        events: EventRecorder,
        clock: Clock,
        observer: ReconcileObserver | None = None,
    ) -> None:
        self.settings = settings
        self.leadership = leadership
        self.clock = clock
        self.observer = observer
        # Real time, not ``clock``: the queue really sleeps until keys are due.
        self.queue = WorkQueue(time.monotonic, settings.backoff_initial_seconds, settings.backoff_max_seconds)
        timeout = settings.watch_timeout_seconds
        self.cards = Informer(
            api, PHYSICAL_GPUS, self._on_card, index_by=card_node, watch_timeout_seconds=timeout
        )
        self.pods = Informer(
            api,
            PODS,
            self._on_pod,
            namespace=settings.namespace,
            label_selector=settings.validator_selector,
            index_by=pod_node,
            watch_timeout_seconds=timeout,
        )
        # Only a Node's existence matters here: metadata only, not the status that fills its events.
        self.nodes = Informer(
            api, NODE_METADATA, self._on_node, transform=_metadata_only, watch_timeout_seconds=timeout
        )
        writer = DriverReadyWriter(api, leadership.is_leader)
        self.reconciler = DriverReadyReconciler(self.cards, self.pods, self.nodes, writer, events, clock)
        self.runtime = ControllerRuntime(
            "gpu-controller",
            self.queue,
            (self.cards, self.pods, self.nodes),
            settings.unhealthy_after_seconds,
        )

    def on_leadership(self, leading: bool) -> None:
        if leading:
            self.enqueue_all()

    def enqueue_all(self) -> None:
        for node in self.cards.index_values():
            self.queue.add(node)

    def start(self, stop: threading.Event) -> None:
        self.runtime.start(stop, self._work, self.settings.workers, [("resync", self._resync)])

    def _enqueue(self, *nodes: str | None) -> None:
        for node in {n for n in nodes if n}:
            self.queue.add(node, self.settings.debounce_seconds)

    def _on_card(self, old: Object | None, new: Object | None) -> None:
        if old is None or new is None or _card_facts(old) != _card_facts(new):
            self._enqueue(*(card_node(c) for c in (old, new) if c is not None))

    def _on_pod(self, old: Object | None, new: Object | None) -> None:
        self._enqueue(*(pod_node(p) for p in (old, new) if p is not None))

    def _on_node(self, old: Object | None, new: Object | None) -> None:
        if old is None or new is None:  # updates of an existing node change nothing here
            self._enqueue(*(str(n["metadata"]["name"]) for n in (old, new) if n is not None))

    def _resync(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.resync_seconds):
            self.enqueue_all()

    def _work(self, stop: threading.Event) -> None:
        self.runtime.wait_synced(stop)  # an empty pod cache would read as "no validator"
        while (node := self.queue.get()) is not None:
            try:
                if self.leadership.is_leader():
                    self._pass(node)
            finally:
                self.queue.done(node)

    def _pass(self, node: str) -> None:
        started = time.perf_counter()
        try:
            outcome = self.reconciler.reconcile(node)
            result = outcome.result
        except Exception:  # a bug in one pass must not stop the worker
            log.exception("reconcile crashed", extra={"node": node})
            result = ERROR
        if self.observer is not None:
            self.observer.observe_reconcile(result, time.perf_counter() - started)
        if result == ERROR:
            delay = self.queue.retry(node)
            log.warning("node pass failed; retrying", extra={"node": node, "retrySeconds": delay})
        else:
            self.queue.forget(node)


def _card_facts(card: Object) -> tuple[object, ...]:
    """What a card change must touch to matter here; other writers' updates are ignored."""
    conditions = (card.get("status") or {}).get("conditions")
    generation = (card.get("metadata") or {}).get("generation")
    return (card_node(card), validated_by_nvidia_validator(card), find(conditions, DRIVER_READY), generation)
