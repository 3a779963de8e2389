# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One inventory pass of gpu-node-agent: scan the host, plan, write, report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from deckhouse_gpu.domain.inventory.desired import DesiredGPU, describe_gpu, node_selector
from deckhouse_gpu.domain.inventory.health.card_events import driver_event
from deckhouse_gpu.domain.inventory.host_facts import node_info
from deckhouse_gpu.domain.inventory.pci import DeviceReadError
from deckhouse_gpu.domain.inventory.sync_plan import plan_sync
from deckhouse_gpu.ports.host import HostReader, HostUnreadable
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, KubeAPI, KubeError, NotFound
from deckhouse_gpu.services.inventory.physicalgpu_writer import PhysicalGPUWriter
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.services.runtime.own_writes import OwnWrites

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostInventory:
    """What the host shows right now, before anything is compared with the API."""

    gpus: list[DesiredGPU]
    errors: list[DeviceReadError]
    scanned: int


@dataclass
class SyncReport:
    ok: bool = True
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    device_errors: list[DeviceReadError] = field(default_factory=list)
    suspected_gone: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    ownerless: bool = False  # cards kept without an owner: the Node was not found


def read_host(host: HostReader, node_name: str) -> HostInventory:
    """Raises HostUnreadable when the PCI device list cannot be read at all."""
    scan = host.scan_pci()
    node = node_info(node_name, host.facts())
    ids = host.pci_ids()
    gpus = [describe_gpu(node_name, device, ids, node) for device in scan.gpus]
    return HostInventory(gpus, scan.errors, scan.scanned)


class InventorySync:
    def __init__(
        self,
        api: KubeAPI,
        host: HostReader,
        node_name: str,
        events: EventRecorder,
        absence_threshold: int = 2,
        cache: Informer | None = None,
    ) -> None:
        self.api = api
        # This node's PhysicalGPUs from the watch cache, with our own writes it does not show yet;
        # without one, each pass lists them.
        self.cache = cache
        self.cached = OwnWrites(cache.items) if cache is not None else None
        self.host = host
        self.node_name = node_name
        self.events = events
        self.absence_threshold = absence_threshold
        self.writer = PhysicalGPUWriter(api)
        self._absences: dict[str, int] = {}
        self._owner: dict[str, Any] | None = None

    def sync(self, removed: frozenset[str] = frozenset()) -> SyncReport:
        started = time.perf_counter()
        report = SyncReport()
        try:
            self._sync(removed, report)
        except HostUnreadable as error:
            report.ok = False
            report.failures.append(str(error))
        except KubeError as error:
            report.ok = False
            report.failures.append(f"{type(error).__name__}: {error}")
        report.seconds = time.perf_counter() - started
        return report

    def _sync(self, removed: frozenset[str], report: SyncReport) -> None:
        inventory = read_host(self.host, self.node_name)
        report.device_errors = inventory.errors
        for error in inventory.errors:
            log.warning("device skipped", extra={"pciAddress": error.address, "error": error.message})
        stored = self._stored()
        names = {str((obj.get("metadata") or {}).get("name")) for obj in stored}
        if any(gpu.name not in names for gpu in inventory.gpus):
            # A card to create: the Node may have been deleted (the garbage collector took its
            # cards) and created anew, with a new uid; an owner naming the old one would have
            # the collector delete the new card at once, again and again.
            self._owner = None
        owner = self._node_owner()
        report.ownerless = owner is None and bool(inventory.gpus)
        plan = plan_sync(
            self.node_name,
            inventory.gpus,
            stored,
            unreadable=frozenset(error.address for error in inventory.errors),
            removed=removed,
            absences=self._absences,
            threshold=self.absence_threshold,
            owner=owner,
        )
        self._absences = dict(plan.suspected_gone)
        report.suspected_gone = plan.suspected_gone
        for gpu in plan.create:
            self._guarded(report, gpu.name, partial(self._create, gpu, owner, report))
        for gpu, obj in plan.update:
            self._guarded(report, gpu.name, partial(self._update, gpu, obj, owner, report))
        by_name = {str(obj["metadata"]["name"]): obj for obj in stored}
        for removal in plan.delete:
            if self.writer.delete(removal.name, removal.uid):
                self._wrote(by_name.get(removal.name), None)
                report.deleted.append(removal.name)
                log.info("PhysicalGPU deleted", extra={"physicalgpu": removal.name, "reason": removal.reason})
                gone = {
                    "apiVersion": PHYSICAL_GPUS.api_version,
                    "kind": PHYSICAL_GPUS.kind,
                    "metadata": {"name": removal.name, "uid": removal.uid},
                }
                message = f"GPU {removal.address or '?'} left node {self.node_name}: {removal.reason}"
                self.events.record(gone, "Normal", "PhysicalGPUDeleted", message)

    def _stored(self) -> list[dict[str, Any]]:
        if self.cache is None or self.cached is None:
            return self.api.list(PHYSICAL_GPUS, label_selector=node_selector(self.node_name)).items
        if not self.cache.synced.is_set():
            raise KubeError("the PhysicalGPU watch cache is not filled yet")
        return self.cached.items()

    def _wrote(self, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        if self.cached is not None and (before is not None or after is not None):
            self.cached.wrote(before, after)

    def own(self, obj: dict[str, Any]) -> bool:
        """Whether a watch event's object is the result of one of our writes."""
        return self.cached is not None and self.cached.own(obj)

    def _guarded(self, report: SyncReport, name: str, action: Callable[[], None]) -> None:
        """One card's API failure never stops the others; the pass is retried as a whole."""
        try:
            action()
        except KubeError as error:
            report.ok = False
            report.failures.append(f"{name}: {type(error).__name__}: {error}")
            log.warning("PhysicalGPU write failed", extra={"physicalgpu": name, "error": str(error)})

    def _create(self, gpu: DesiredGPU, owner: dict[str, Any] | None, report: SyncReport) -> None:
        obj = self.writer.create(gpu, owner)
        self._wrote(None, obj)
        report.created.append(gpu.name)
        log.info("PhysicalGPU created", extra={"physicalgpu": gpu.name, "pciAddress": gpu.address})
        pci = gpu.status["pciInfo"]
        model = pci["device"].get("name") or f"{pci['vendor']['id']}:{pci['device']['id']}"
        self.events.record(
            obj, "Normal", "PhysicalGPUCreated", f"GPU {gpu.address} ({model}) found on node {self.node_name}"
        )

    def _update(
        self, gpu: DesiredGPU, obj: Mapping[str, Any], owner: dict[str, Any] | None, report: SyncReport
    ) -> None:
        self._wrote(dict(obj), self.writer.update(gpu, dict(obj), owner))
        report.updated.append(gpu.name)
        log.info("PhysicalGPU updated", extra={"physicalgpu": gpu.name})
        before = ((obj.get("status") or {}).get("currentState") or {}).get("driverName")
        event = driver_event(
            before, gpu.status["currentState"].get("driverName"), self.node_name, gpu.address
        )
        if event is not None:
            self.events.record(dict(obj), event.type, event.reason, event.message)

    def _node_owner(self) -> dict[str, Any] | None:
        """The Node as owner, so the garbage collector removes our objects with the node.

        Without the Node's real uid no owner is set: a wrong uid would make the garbage
        collector delete the object at once.
        """
        if self._owner is None:
            try:
                node = self.api.get(NODES, self.node_name)
            except NotFound:
                log.warning(
                    "node not found; PhysicalGPUs are created without an owner",
                    extra={"node": self.node_name},
                )
                return None
            self._owner = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": self.node_name,
                "uid": node["metadata"]["uid"],
            }
        return self._owner
