# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's allocation of the claims the scheduler never allocates (DESIGN.md D1).

The allocator runs over the informers' caches, plus the allocations this controller has written
but its claim cache has not seen yet (as the scheduler's assume cache does), so two claims never
get one device from us. Writes carry the claim's resourceVersion: a conflict means someone else
changed the claim, so it is read again and retried, never overwritten.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from deckhouse_gpu.domain.allocation.explain import explain
from deckhouse_gpu.domain.allocation.node_bound_claims import (
    ClaimRef,
    allocated,
    finalizer_patch,
    status_patch,
)
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import ClaimError, parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import Inventory, InventoryBuilder
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, Conflict, KubeAPI, KubeError, NotFound, Object
from deckhouse_gpu.services.runtime.bulk_load import bulk_load
from deckhouse_gpu.services.runtime.events import EventRecorder

log = logging.getLogger(__name__)

ALLOCATED, WAITING, UNSCHEDULABLE, FAILED, NOTHING = (
    "allocated",
    "waiting",
    "unschedulable",
    "error",
    "nothing",
)


class Caches(Protocol):
    def slices_list(self) -> list[Object]: ...
    def classes_list(self) -> list[Object]: ...
    def claims_list(self) -> list[Object]: ...
    def claim(self, ref: ClaimRef) -> Object | None: ...
    def node(self, name: str) -> Object | None: ...


@dataclass(frozen=True)
class Attempt:
    result: str
    message: str = ""


class ClaimAllocation:
    def __init__(
        self,
        api: KubeAPI,
        caches: Caches,
        semantics: Callable[[], Semantics],
        matcher: Callable[[Semantics], SelectorMatcher],
        events: EventRecorder,
        on_allocated: Callable[[Object], None] | None = None,
        builder: InventoryBuilder | None = None,
    ) -> None:
        self.api = api
        self.caches = caches
        self.semantics = semantics
        self.matcher = matcher
        self.events = events
        self.on_allocated = on_allocated or (lambda _: None)
        self._assumed: dict[str, Object] = {}
        self._inventory: Inventory | None = None
        self._builder = builder or InventoryBuilder()
        # One allocation at a time, from reading the state to writing the claims, as the
        # scheduler's single scheduling loop does: two workers deciding at once would both see
        # a device free.
        self._lock = threading.Lock()

    def assumed(self, claim: Object) -> bool:
        """Written by this controller and not yet seen in the cache."""
        meta = claim.get("metadata") or {}
        return f"{meta.get('namespace')}/{meta.get('name')}" in self._assumed

    def slices_changed(self) -> None:
        self._inventory = None  # parsed again at the next allocation, not at every slice event

    def _claims(self) -> list[Object]:
        cached = {
            f"{c['metadata'].get('namespace')}/{c['metadata'].get('name')}": c
            for c in self.caches.claims_list()
        }
        for ref, claim in list(self._assumed.items()):
            seen = cached.get(ref)
            if seen is not None and allocated(seen):
                del self._assumed[ref]  # the cache has caught up
            elif seen is None:
                del self._assumed[ref]  # deleted meanwhile
            else:
                cached[ref] = claim
        return list(cached.values())

    def allocate(self, refs: list[ClaimRef], node: str, pod: Object | None) -> Attempt:
        """Allocates the unallocated claims among ``refs`` together on ``node``."""
        with self._lock:
            return self._allocate(refs, node, pod)

    def _allocate(self, refs: list[ClaimRef], node: str, pod: Object | None) -> Attempt:
        claims = []
        for ref in refs:
            claim = self._assumed.get(str(ref)) or self.caches.claim(ref)
            if claim is None:
                return Attempt(WAITING, f"claim {ref} does not exist yet")
            if not allocated(claim):
                claims.append(claim)
        if not claims:
            return Attempt(NOTHING)
        semantics = self.semantics()
        if self._inventory is None:
            with bulk_load():  # the first build parses every slice of the cluster
                self._inventory = self._builder.build(self.caches.slices_list())
        try:
            classes = parse_classes(self.caches.classes_list())
            parsed = [parse_claim(claim, classes, semantics) for claim in claims]
        except ClaimError as error:
            return self._failed(claims, pod, str(error))
        node_object = self.caches.node(node) or {}
        target = Node(node, dict((node_object.get("metadata") or {}).get("labels") or {}))
        state = allocated_state(self._claims(), semantics.consumable)
        allocator = Allocator(self._inventory, semantics, self.matcher(semantics))
        outcome = allocator.allocate(parsed, target, state)
        if outcome.error:
            return self._failed(claims, pod, outcome.error)
        if outcome.allocations is None:
            reasons = explain(allocator, parsed, target, state)
            message = f"cannot allocate on node {node}: " + "; ".join(reasons)
            self._event(claims, pod, "Warning", "AllocationFailed", message[:1024])
            return Attempt(UNSCHEDULABLE, message)
        for claim, allocation in zip(claims, outcome.allocations, strict=True):
            written = self._write(claim, allocation, pod)
            if written.result != ALLOCATED:
                return written
        return Attempt(ALLOCATED)

    def _write(self, claim: Object, allocation: Mapping[str, Any], pod: Object | None) -> Attempt:
        meta = claim["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        try:
            current = claim
            patch = finalizer_patch(claim)
            if patch is not None:
                current = self.api.patch(RESOURCE_CLAIMS, name, patch, namespace=namespace)
            stored = self.api.patch(
                RESOURCE_CLAIMS,
                name,
                status_patch(current, allocation, pod),
                subresource="status",
                namespace=namespace,
            )
        except Conflict:
            return Attempt(WAITING, f"claim {namespace}/{name} changed meanwhile; read again")
        except NotFound:
            return Attempt(NOTHING, f"claim {namespace}/{name} is gone")
        except KubeError as error:
            return Attempt(FAILED, f"claim {namespace}/{name}: {error}")
        self._assumed[f"{namespace}/{name}"] = stored
        self.on_allocated(stored)
        devices = ", ".join(r["device"] for r in allocation["devices"]["results"])
        log.info("claim allocated", extra={"claim": f"{namespace}/{name}", "devices": devices})
        return Attempt(ALLOCATED)

    def _failed(self, claims: list[Object], pod: Object | None, message: str) -> Attempt:
        self._event(claims, pod, "Warning", "AllocationError", message[:1024])
        return Attempt(FAILED, message)

    def _event(self, claims: list[Object], pod: Object | None, kind: str, reason: str, message: str) -> None:
        for claim in claims:
            self.events.record(dict(claim), kind, reason, message)
        if pod is not None:
            self.events.record(dict(pod), kind, reason, message)
