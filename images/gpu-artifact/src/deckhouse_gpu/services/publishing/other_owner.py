# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's side of another owner (DESIGN.md D16): which of this node's cards it must keep its
hands off, the ``OtherOwner`` condition of each card, one Event on the Node per change, the metric.

The loop asks it once per pass, after the capabilities pass and before publishing: the held cards
are left out of the offers and prepare refuses new claims on them. Claims already prepared stay
as they are (their Pods run); they are named in the Event when another owner comes while they are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.other_owner import (
    OTHER_OWNER,
    REASON_PROCESSES,
    Owner,
    card_owner,
    condition,
    node_owner,
)
from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, KubeError, NotFound, Object
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioError
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.status_writer import patch_status

log = logging.getLogger(__name__)

EVENT_FOUND = "OtherGPUOwner"
EVENT_GONE = "OtherGPUOwnerGone"


class OwnerObserver(Protocol):
    def observe_other_owner(self, held: Mapping[str, int]) -> None:
        """Cards held now, by reason (every known reason reported, 0 when none)."""
        ...


def _address(card: Mapping[str, Any]) -> str:
    return str(((card.get("status") or {}).get("pciInfo") or {}).get("address") or "")


class OwnerBoard:
    def __init__(
        self,
        api: KubeAPI,
        node_name: str,
        events: EventRecorder,
        clock: Clock,
        processes: GpuProcesses | None = None,
        observer: OwnerObserver | None = None,
        written: Callable[[str], None] | None = None,
    ) -> None:
        self.api, self.node_name, self.events, self.clock = api, node_name, events, clock
        self.processes = processes  # None: processes are not looked at (simulator, tests)
        self.observer = observer
        self.written = written  # resourceVersions of our writes, so their watch events are ignored
        self._lock = threading.Lock()  # held() is read from the kubelet's gRPC threads
        self._held: dict[str, str] = {}
        self._node: Owner | None = None
        self._said: str | None = None  # the node-level reason last said in an Event ("" for none)

    def held(self) -> dict[str, str]:
        """PCI address -> why the card is another owner's, as of the last pass."""
        with self._lock:
            return dict(self._held)

    def prime(self, cards: list[Object], node: Object | None) -> None:
        """Decides which cards are held before the first pass, writing nothing: prepare's clean-up
        at start must not touch another owner's MIG instances or card settings."""
        owner = node_owner(node)
        held = {}
        for card in cards:
            address = _address(card)
            found = card_owner(owner, self._pids(address), prepared=False)
            if found is not None and address:
                held[address] = found.message
        with self._lock:
            self._held = held

    def apply(
        self, cards: list[Object], node: Object | None, prepared: Mapping[str, Any], claims: list[str]
    ) -> list[Object]:
        """Writes each card's condition; returns the cards the module may offer. ``prepared``: the
        cards claims of this node are prepared on; ``claims``: those claims, for the Event."""
        owner = node_owner(node)
        held: dict[str, str] = {}
        free: list[Object] = []
        for card in cards:
            address = _address(card)
            found = card_owner(owner, self._pids(address), address in prepared)
            if found is None:
                free.append(card)
            else:
                held[address] = found.message
            self._write(card, found)
        with self._lock:
            self._held, self._node = held, owner
        self._tell(owner, node, claims)
        if self.observer is not None:
            counts: dict[str, int] = {}
            for card in cards:
                reason = self._reason(card, owner, held)
                if reason:
                    counts[reason] = counts.get(reason, 0) + 1
            self.observer.observe_other_owner(counts)
        return free

    @staticmethod
    def _reason(card: Object, owner: Owner | None, held: Mapping[str, str]) -> str | None:
        address = _address(card)
        if address not in held:
            return None
        return owner.reason if owner is not None else REASON_PROCESSES

    def _pids(self, address: str) -> tuple[int, ...] | None:
        if self.processes is None or not address:
            return None
        try:
            return self.processes.processes(address)
        except VfioError as error:  # NVML cannot tell now: the card is not held for that
            log.debug("processes unknown", extra={"address": address, "error": str(error)})
            return None

    def _write(self, card: Object, owner: Owner | None) -> None:
        status, reason, message = condition(owner)
        now = rfc3339(self.clock.now())

        def make_patch(stored: dict[str, Any] | None) -> dict[str, Any]:
            current = (stored or {}).get("conditions") or []
            updated = conditions.set_condition(current, OTHER_OWNER, status, reason, message, now)
            return {"conditions": updated} if updated != current else {}

        try:
            stored, patch = patch_status(self.api, PHYSICAL_GPUS, card, make_patch)
        except NotFound:
            return  # deleted meanwhile
        except KubeError as error:  # the next pass writes it; the offers already follow the verdict
            log.warning(
                "OtherOwner not written", extra={"physicalgpu": card["metadata"]["name"], "error": str(error)}
            )
            return
        if patch and self.written is not None:
            self.written(str(stored["metadata"].get("resourceVersion")))

    def _tell(self, owner: Owner | None, node: Object | None, claims: list[str]) -> None:
        """One Event on the Node when the node-level owner comes, changes or goes."""
        said = owner.reason if owner is not None else ""
        if said == self._said:
            return
        first = self._said is None
        self._said = said
        if first and owner is None:
            return  # nothing to say about a node that was always the module's
        regarding = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": (node or {}).get("metadata") or {"name": self.node_name},
        }
        if owner is None:
            message = "no device plugin or other owner holds this node's GPUs any more: DRA offers them"
            self.events.record(regarding, "Normal", EVENT_GONE, message)
            log.info("other GPU owner gone", extra={"node": self.node_name})
            return
        message = owner.message
        if claims:
            shown = ", ".join(claims[:5]) + (f" and {len(claims) - 5} more" if len(claims) > 5 else "")
            message += f"; claims prepared before stay prepared until their Pods end: {shown}"
        self.events.record(regarding, "Warning", EVENT_FOUND, message)
        log.warning(
            "other GPU owner", extra={"node": self.node_name, "reason": owner.reason, "claims": claims}
        )
