# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's GPUClass loop: for each GPUClass, the DeviceClass of the same name and
the Ready condition (DESIGN.md D14; the rules are in domain/gpuclass).

It runs in gpu-dra-controller, beside the allocator whose caches of slices and nodes it reads:
the classes are DRA objects, and how many devices a class selects is read off the same slices.
Work keys are GPUClass names. A change of a GPUClass or of a DeviceClass of the same name queues
that name (a DeviceClass edited or deleted by hand is put back); a change of the published
devices or of node labels queues every class after a longer debounce (the counts in the status,
and the cards a node selector picks). Workers act only while this replica leads, under the
allocator's lease. Its caches do not hold up the allocator's readiness: a cluster without the
CRD still allocates.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from deckhouse_gpu.domain.gpuclass import render, status
from deckhouse_gpu.domain.gpuclass.matching import card_uuids, matching
from deckhouse_gpu.domain.gpuclass.spec import GpuClassSpec, InvalidSpec, parse_spec
from deckhouse_gpu.domain.inventory.other_owner import served_elsewhere
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorMatcher
from deckhouse_gpu.k8s_semantics.resources.model import Inventory
from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, GPU_CLASSES
from deckhouse_gpu.ports.kube import AlreadyExists, Conflict, Invalid, KubeAPI, KubeError, NotFound, Object
from deckhouse_gpu.services.runtime.controller_runtime import ControllerRuntime, RuntimeProbes
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.leader_election import Leadership
from deckhouse_gpu.services.runtime.status_writer import patch_status
from deckhouse_gpu.services.runtime.work_queue import WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuClassSettings:
    workers: int = 1
    debounce_seconds: float = 0.1
    inventory_debounce_seconds: float = 2.0  # a node publishing its slices moves every count
    resync_seconds: float = 300.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    watch_timeout_seconds: int = 300
    unhealthy_after_seconds: float = 300.0


class ClusterView(Protocol):
    """The allocator's caches this loop reads (services/allocation/dra_controller.py)."""

    def current_inventory(self) -> Inventory: ...
    def node(self, name: str) -> Object | None: ...


@dataclass(frozen=True)
class Outcome:
    verdict: status.Verdict | None  # None: an API failure, retried
    written: bool = False  # the DeviceClass was created or changed


GONE = status.Verdict(False, "Deleted", "the GPUClass is gone or going")


class GpuClassController(RuntimeProbes):
    def __init__(
        self,
        api: KubeAPI,
        settings: GpuClassSettings,
        leadership: Leadership,
        cluster: ClusterView,
        matcher: SelectorMatcher,
        clock: Clock,
        device_classes: Informer | None = None,
    ) -> None:
        self.api = api
        self.settings = settings
        self.leadership = leadership
        self.cluster = cluster
        self.matcher = matcher
        self.clock = clock
        self.queue = WorkQueue(time.monotonic, settings.backoff_initial_seconds, settings.backoff_max_seconds)
        timeout = settings.watch_timeout_seconds
        self.gpu_classes = Informer(api, GPU_CLASSES, self._on_change, watch_timeout_seconds=timeout)
        # The allocator's DeviceClass cache when it runs beside (one watch of the kind per process;
        # its changes reach ``on_device_class``), else one of its own.
        own = device_classes is None
        self.device_classes = device_classes or Informer(
            api, DEVICE_CLASSES, self._on_change, watch_timeout_seconds=timeout
        )
        self.runtime = ControllerRuntime(
            "gpu-dra-controller-gpuclass",
            self.queue,
            (self.gpu_classes, self.device_classes) if own else (self.gpu_classes,),
            settings.unhealthy_after_seconds,
            shared=() if own else (self.device_classes,),
        )

    # -- events -------------------------------------------------------------------------------

    def on_leadership(self, leading: bool) -> None:
        if leading:
            self.enqueue_all()

    def enqueue_all(self, delay: float = 0.0) -> None:
        for item in self.gpu_classes.items():
            self.queue.add(str(item["metadata"]["name"]), delay)

    def inventory_changed(self) -> None:
        self.enqueue_all(self.settings.inventory_debounce_seconds)

    def on_device_class(self, old: Object | None, new: Object | None) -> None:
        """A change of the shared DeviceClass cache."""
        self._on_change(old, new)

    def _on_change(self, old: Object | None, new: Object | None) -> None:
        for item in (old, new):
            if item is not None:
                self.queue.add(str(item["metadata"]["name"]), self.settings.debounce_seconds)

    # -- work ---------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        self.runtime.start(stop, self._work, self.settings.workers, [("gpuclass-resync", self._resync)])

    def enqueue_all_when_synced(self, stop: threading.Event) -> None:
        """Without leader election nothing announces leadership: queue every class once synced."""

        def wait() -> None:
            self.runtime.wait_synced(stop)
            self.enqueue_all()

        threading.Thread(target=wait, name="gpu-dra-controller-gpuclass-initial", daemon=True).start()

    def _resync(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.resync_seconds):
            self.enqueue_all()

    def _work(self, stop: threading.Event) -> None:
        self.runtime.wait_synced(stop)  # an empty DeviceClass cache would read as "name free"
        while (name := self.queue.get()) is not None:
            try:
                if self.leadership.is_leader():
                    outcome = self.reconcile(name)
                    if outcome.verdict is None:
                        self.queue.retry(name)
                    else:
                        self.queue.forget(name)
            except Exception:  # a bug in one class must not stop the worker
                log.exception("GPUClass reconcile crashed", extra={"gpuclass": name})
                self.queue.retry(name)
            finally:
                self.queue.done(name)

    # -- one class: the steps ------------------------------------------------------------------

    def reconcile(self, name: str) -> Outcome:
        """Read the class, check it, keep its DeviceClass, then say so in its status."""
        gpu_class = self.gpu_classes.get(name)
        if gpu_class is None:
            return self._collect(name)
        if (gpu_class.get("metadata") or {}).get("deletionTimestamp"):
            return Outcome(GONE)  # the garbage collector takes the DeviceClass with it
        try:
            spec = parse_spec(gpu_class.get("spec"))
        except InvalidSpec as error:
            return self._report(gpu_class, status.invalid(error.problems), None, None)
        existing = self.device_classes.get(name)
        if existing is not None and not render.owned_by_a_gpu_class(existing, name):
            return self._report(gpu_class, status.name_taken(name), spec, None)
        holder = self._extended_resource_holder(gpu_class, spec)
        if holder is not None and spec.extended_resource_name:
            verdict = status.extended_resource_taken(spec.extended_resource_name, holder)
            return self._report(gpu_class, verdict, spec, None)
        inventory = self.cluster.current_inventory()
        uuids = None
        if spec.cards.node_selector is not None:
            uuids = card_uuids(inventory, spec.cards.node_selector, self._node_labels)
        desired = render.device_class(gpu_class, spec, uuids)
        try:
            written = self._keep_device_class(existing, desired)
        except Invalid as error:
            return self._report(gpu_class, status.rejected(name, str(error)), spec, None)
        except KubeError as error:
            log.warning("DeviceClass write failed; retrying", extra={"gpuclass": name, "error": str(error)})
            return Outcome(None)
        expression = desired["spec"]["selectors"][0]["cel"]["expression"]
        found = matching(inventory, expression, self.matcher)
        conflict = None
        if spec.extended_resource_name:
            resource = spec.extended_resource_name
            served = [n for n in found.node_names if served_elsewhere(self.cluster.node(n), resource)]
            conflict = status.plugin_conflict(resource, served)
        outcome = self._report(gpu_class, status.ready(name, found), spec, found, conflict)
        return Outcome(outcome.verdict, written)

    def _node_labels(self, node: str) -> dict[str, str] | None:
        found = self.cluster.node(node)
        return None if found is None else dict((found.get("metadata") or {}).get("labels") or {})

    def _extended_resource_holder(self, gpu_class: Object, spec: GpuClassSpec) -> str | None:
        """Another class that has the extended resource name: a DeviceClass of another name, or
        an older GPUClass (the oldest keeps it, so that a newcomer never takes it away)."""
        wanted = spec.extended_resource_name
        if not wanted:
            return None
        name = gpu_class["metadata"]["name"]
        for other in self.device_classes.items():
            other_name = other["metadata"]["name"]
            if other_name != name and (other.get("spec") or {}).get("extendedResourceName") == wanted:
                return str(other_name)
        mine = _age(gpu_class)
        for other in self.gpu_classes.items():
            if (other.get("spec") or {}).get("extendedResourceName") == wanted and _age(other) < mine:
                return str(other["metadata"]["name"])
        return None

    def _keep_device_class(self, existing: Object | None, desired: Object) -> bool:
        name = desired["metadata"]["name"]
        if existing is None:
            try:
                self.api.create(DEVICE_CLASSES, desired)
            except AlreadyExists:  # created meanwhile (the cache lags): decided on the next pass
                raise Conflict(f"DeviceClass {name} appeared meanwhile") from None
            log.info("DeviceClass created", extra={"gpuclass": name})
            return True
        patch = render.update_patch(existing, desired)
        if patch is None:
            return False
        self.api.patch(DEVICE_CLASSES, name, patch)
        log.info("DeviceClass updated", extra={"gpuclass": name, "fields": sorted(patch.get("spec") or {})})
        return True

    def _collect(self, name: str) -> Outcome:
        """The GPUClass is gone: its DeviceClass goes too. The garbage collector does it in a
        cluster; this covers an API server without one and a collector that lags."""
        existing = self.device_classes.get(name)
        if existing is None or not render.owned_by_a_gpu_class(existing, name):
            return Outcome(GONE)
        try:
            self.api.delete(DEVICE_CLASSES, name, uid=existing["metadata"].get("uid"))
        except (NotFound, Conflict):
            pass  # gone already, or replaced by an object that is not this one
        except KubeError as error:
            log.warning("DeviceClass delete failed; retrying", extra={"gpuclass": name, "error": str(error)})
            return Outcome(None)
        log.info("DeviceClass of a deleted GPUClass deleted", extra={"gpuclass": name})
        return Outcome(GONE, written=True)

    def _report(
        self,
        gpu_class: Object,
        verdict: status.Verdict,
        spec: GpuClassSpec | None,
        found: status.Matching | None,
        conflict: status.PluginConflict | None = None,
    ) -> Outcome:
        meta = gpu_class["metadata"]
        generation = meta.get("generation")
        selects = render.summary(spec) if spec is not None else None
        now = rfc3339(self.clock.now())

        def make_patch(current: dict[str, Any] | None) -> dict[str, Any]:
            return status.status_patch(current, verdict, generation, now, selects, found, conflict)

        try:
            patch_status(self.api, GPU_CLASSES, gpu_class, make_patch)
        except NotFound:
            pass  # deleted meanwhile: nothing to report on
        except KubeError as error:
            log.warning(
                "GPUClass status write failed; retrying",
                extra={"gpuclass": meta["name"], "error": str(error)},
            )
            return Outcome(None)
        if not verdict.ready:
            log.info(
                "GPUClass not ready",
                extra={"gpuclass": meta["name"], "reason": verdict.reason, "detail": verdict.message},
            )
        return Outcome(verdict)


def _age(item: Object) -> tuple[str, str]:
    meta = item.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
