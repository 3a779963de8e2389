# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's loop: caches of claims, pods, slices, classes and nodes; allocation of the
claims the scheduler never allocates; the audit of every allocation; the numbers the metrics read.

Work keys are ``pod:<ns>/<name>``, ``claim:<ns>/<name>`` and ``audit``. Workers act only while this
replica leads (Lease gpu-dra-controller); every replica keeps warm caches so a new leader starts at
once. A failed or unschedulable allocation is retried with a growing delay, as the scheduler
retries an unschedulable pod.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from deckhouse_gpu.domain.allocation.audit import CardSharingOf, Violation, audit
from deckhouse_gpu.domain.allocation.node_bound_claims import (
    ClaimRef,
    allocated,
    bound_node,
    marked_node,
    pod_claims,
)
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorMatcher
from deckhouse_gpu.k8s_semantics.resources.model import Inventory, InventoryBuilder
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS
from deckhouse_gpu.ports.kube import NODES, RESOURCE_CLAIMS, RESOURCE_SLICES, KubeAPI, Object
from deckhouse_gpu.services.allocation.cache_views import node_labels_view, pod_claims_view
from deckhouse_gpu.services.allocation.claim_allocation import (
    ALLOCATED,
    FAILED,
    NOTHING,
    UNSCHEDULABLE,
    WAITING,
    ClaimAllocation,
)
from deckhouse_gpu.services.runtime.bulk_load import bulk_load
from deckhouse_gpu.services.runtime.controller_runtime import ControllerRuntime, RuntimeProbes
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.leader_election import Leadership
from deckhouse_gpu.services.runtime.work_queue import WorkQueue

log = logging.getLogger(__name__)
AUDIT = "audit"
# The Pods a claim may wait on this controller for: bound to a node by their spec (no scheduler
# allocated their claims) and not running yet. Pods that run, and Pods the scheduler has not
# placed, are none of its business.
ACTIONABLE_PODS = "status.phase=Pending,spec.nodeName!="


@dataclass(frozen=True)
class DraControllerSettings:
    workers: int = 2
    debounce_seconds: float = 0.1
    audit_debounce_seconds: float = 2.0
    audit_interval_seconds: float = 60.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    watch_timeout_seconds: int = 300
    unhealthy_after_seconds: float = 300.0


class AllocationObserver(Protocol):
    def observe_attempt(self, result: str) -> None: ...
    def observe_allocated(self, claim: Object) -> None: ...


@dataclass
class AuditReport:
    violations: list[Violation] = field(default_factory=list)
    at: float | None = None


class DraController(RuntimeProbes):
    def __init__(
        self,
        api: KubeAPI,
        settings: DraControllerSettings,
        leadership: Leadership,
        events: EventRecorder,
        semantics: Callable[[], Semantics],
        matcher: Callable[[Semantics], SelectorMatcher],
        sharing_of: CardSharingOf,
        observer: AllocationObserver | None = None,
    ) -> None:
        self.settings = settings
        self.leadership = leadership
        self.events = events
        self.semantics = semantics
        self.sharing_of = sharing_of
        self.observer = observer
        self.queue = WorkQueue(time.monotonic, settings.backoff_initial_seconds, settings.backoff_max_seconds)
        timeout = settings.watch_timeout_seconds
        self.claims = Informer(api, RESOURCE_CLAIMS, self._on_claim, watch_timeout_seconds=timeout)
        # Only the Pods it may act on: bound to a node and not started (DESIGN.md D17). The server
        # filters, so the Pods of the rest of the cluster are neither sent nor held.
        self.pods = Informer(
            api,
            PODS,
            self._on_pod,
            field_selector=ACTIONABLE_PODS,
            transform=pod_claims_view,
            watch_timeout_seconds=timeout,
        )
        self.slices = Informer(api, RESOURCE_SLICES, self._on_slice, watch_timeout_seconds=timeout)
        # Classes are read at every allocation: their changes need no reaction here; the GPUClass
        # loop shares this cache and hears them (``class_listeners``).
        self.class_listeners: list[Callable[[Object | None, Object | None], None]] = []
        self.classes = Informer(api, DEVICE_CLASSES, self._on_class, watch_timeout_seconds=timeout)
        # Labels are all it reads of a Node: metadata only, not the status that fills every event.
        self.nodes = Informer(
            # Whole Nodes, trimmed by the view: a GPUClass needs their device plugins' allocatable
            # (DESIGN.md D16), which metadata alone does not carry.
            api,
            NODES,
            self._on_node,
            transform=node_labels_view,
            watch_timeout_seconds=timeout,
        )
        # Called when the published devices or node labels change (the GPUClass loop's counts).
        self.inventory_listeners: list[Callable[[], None]] = []
        # One parse of the slices serves the allocation and the audit (and their device caches).
        self.inventory = InventoryBuilder()
        self.allocation = ClaimAllocation(
            api, self, semantics, matcher, events, on_allocated=self._allocated_by_us, builder=self.inventory
        )
        self.report = AuditReport()

        self._reported: set[tuple[str, tuple[str, ...], str]] = set()
        self.runtime = ControllerRuntime(
            "gpu-dra-controller", self.queue, self.informers(), settings.unhealthy_after_seconds
        )

    # -- caches (the ClaimAllocation's view) -------------------------------------------------

    def informers(self) -> tuple[Informer, ...]:
        return (self.claims, self.pods, self.slices, self.classes, self.nodes)

    def claim(self, ref: ClaimRef) -> Object | None:
        return self.claims.get(ref.name, ref.namespace)

    def node(self, name: str) -> Object | None:
        return self.nodes.get(name)

    def slices_list(self) -> list[Object]:
        return self.slices.items()

    def current_inventory(self) -> Inventory:
        with bulk_load():  # the first build parses every slice of the cluster
            return self.inventory.build(self.slices.items())

    def classes_list(self) -> list[Object]:
        return self.classes.items()

    def claims_list(self) -> list[Object]:
        return self.claims.items()

    # -- events -------------------------------------------------------------------------------

    def on_leadership(self, leading: bool) -> None:
        if leading:
            self.enqueue_all()

    def enqueue_all_when_synced(self, stop: threading.Event) -> None:
        """Without leader election nothing announces leadership: queue everything once synced."""

        def wait() -> None:
            self.runtime.wait_synced(stop)
            self.enqueue_all()

        threading.Thread(target=wait, name="gpu-dra-controller-initial", daemon=True).start()

    def enqueue_all(self) -> None:
        for pod in self.pods.items():
            self._on_pod(None, pod)
        for claim in self.claims.items():
            self._on_claim(None, claim)
        self.queue.add(AUDIT)

    def _on_pod(self, old: Object | None, new: Object | None) -> None:
        if new is None or bound_node(new) is None:
            return
        refs, pending = pod_claims(new)
        known = [self.claim(r) for r in refs]
        if pending or any(c is None or not allocated(c) for c in known):
            meta = new["metadata"]
            self.queue.add(f"pod:{meta.get('namespace')}/{meta.get('name')}", self.settings.debounce_seconds)

    def _on_claim(self, old: Object | None, new: Object | None) -> None:
        if new is not None and not allocated(new):
            meta = new["metadata"]
            if marked_node(new):
                self.queue.add(
                    f"claim:{meta.get('namespace')}/{meta.get('name')}", self.settings.debounce_seconds
                )
            for owner in meta.get("ownerReferences") or ():
                if owner.get("kind") == "Pod":  # a template's claim appeared: its pod may be waiting
                    self.queue.add(
                        f"pod:{meta.get('namespace')}/{owner.get('name')}", self.settings.debounce_seconds
                    )
        # Seen unallocated first: the time from creation to allocation is measurable. Allocations
        # by this controller are observed when written, so they are not counted twice.
        newly = new is not None and old is not None and allocated(new) and not allocated(old)
        if newly and new is not None and self.observer is not None and not self.allocation.assumed(new):
            self.observer.observe_allocated(new)
        self.queue.add(AUDIT, self.settings.audit_debounce_seconds)

    def _on_class(self, old: Object | None, new: Object | None) -> None:
        for listener in self.class_listeners:
            listener(old, new)

    def _on_slice(self, old: Object | None, new: Object | None) -> None:
        self.allocation.slices_changed()
        self.queue.add(AUDIT, self.settings.audit_debounce_seconds)
        self._inventory_changed()

    def _on_node(self, old: Object | None, new: Object | None) -> None:
        labels = [((n or {}).get("metadata") or {}).get("labels") for n in (old, new)]
        plugins = [(n or {}).get("status") for n in (old, new)]  # device plugins' resources (D16)
        if old is None or new is None or labels[0] != labels[1] or plugins[0] != plugins[1]:
            self._inventory_changed()

    def _inventory_changed(self) -> None:
        for listener in self.inventory_listeners:
            listener()

    def _allocated_by_us(self, claim: Object) -> None:
        if self.observer is not None:
            self.observer.observe_allocated(claim)

    # -- work ---------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        self.runtime.start(stop, self._work, self.settings.workers, [("audit-timer", self._audit_timer)])

    def _audit_timer(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.audit_interval_seconds):
            self.queue.add(AUDIT)

    def _work(self, stop: threading.Event) -> None:
        self.runtime.wait_synced(stop)
        while (key := self.queue.get()) is not None:
            try:
                if self.leadership.is_leader():
                    self._handle(key)
            except Exception:  # a bug in one key must not stop the worker
                log.exception("work item crashed", extra={"key": key})
                self.queue.retry(key)
            finally:
                self.queue.done(key)

    def _handle(self, key: str) -> None:
        if key == AUDIT:
            self.run_audit()
            return
        kind, _, ref_text = key.partition(":")
        namespace, _, name = ref_text.partition("/")
        if kind == "pod":
            pod = self.pods.get(name, namespace)
            node = bound_node(pod) if pod is not None else None
            if pod is None or node is None:
                self.queue.forget(key)
                return
            refs, pending = pod_claims(pod)
            attempt = self.allocation.allocate(refs, node, pod)
            if pending and attempt.result in (ALLOCATED, NOTHING):
                attempt = type(attempt)(WAITING, f"claims of {', '.join(pending)} not created yet")
        else:
            claim = self.claims.get(name, namespace)
            node = marked_node(claim) if claim is not None else None
            if claim is None or node is None or allocated(claim):
                self.queue.forget(key)
                return
            attempt = self.allocation.allocate([ClaimRef(namespace, name)], node, None)
        if self.observer is not None and attempt.result != NOTHING:
            self.observer.observe_attempt(attempt.result)
        if attempt.result in (UNSCHEDULABLE, FAILED, WAITING):
            delay = self.queue.retry(key)
            log.info(
                "allocation retried",
                extra={
                    "key": key,
                    "result": attempt.result,
                    "reason": attempt.message,
                    "retrySeconds": delay,
                },
            )
        else:
            self.queue.forget(key)

    # -- audit --------------------------------------------------------------------------------

    def run_audit(self) -> list[Violation]:
        with bulk_load():  # the first build parses every slice of the cluster
            inventory = self.inventory.build(self.slices.items())
        found = audit(inventory, self.claims.items(), self.sharing_of)
        self.report = AuditReport(found, time.time())
        current = {(v.kind, v.claims, v.subject) for v in found}
        for violation in found:
            key = (violation.kind, violation.claims, violation.subject)
            if key in self._reported:
                continue  # one event per violation, not one per audit pass
            log.error(
                "allocation invariant violated",
                extra={
                    "kind": violation.kind,
                    "claims": list(violation.claims),
                    "node": violation.node,
                    "reason": violation.message,
                },
            )
            for ref in violation.claims:
                namespace, _, name = ref.partition("/")
                claim = self.claims.get(name, namespace)
                if claim is not None:
                    self.events.record(dict(claim), "Warning", violation.kind, violation.message[:1024])
        self._reported = current
        return found
