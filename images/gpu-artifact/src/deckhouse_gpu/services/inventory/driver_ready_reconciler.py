# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One node's pass of gpu-controller: DriverReady on each of its cards, from the validator pods.

It reads only the caches; the API is called only to write a condition that must change, and
an Event is recorded when DriverReady changes status. One card's API failure is reported and
the other cards of the node are still written; the node is then retried with backoff.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from deckhouse_gpu.domain.inventory.driver_ready import (
    Verdict,
    validated_by_nvidia_validator,
    verdict,
)
from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY, ConditionStatus
from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.kube import Forbidden, KubeError
from deckhouse_gpu.services.inventory.driver_ready_writer import DriverReadyWriter, NotLeader, WriteResult
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.informer import Informer

log = logging.getLogger(__name__)

SUCCESS, ERROR, SKIPPED = "success", "error", "skipped"


@dataclass
class NodeResult:
    node: str
    result: str = SUCCESS  # SUCCESS, ERROR or SKIPPED (node gone, leadership lost)
    written: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class DriverReadyReconciler:
    def __init__(
        self,
        cards: Informer,
        pods: Informer,
        nodes: Informer,
        writer: DriverReadyWriter,
        events: EventRecorder,
        clock: Clock,
    ) -> None:
        self.cards = cards
        self.pods = pods
        self.nodes = nodes
        self.writer = writer
        self.events = events
        self.clock = clock

    def reconcile(self, node: str) -> NodeResult:
        outcome = NodeResult(node)
        cards = [card for card in self.cards.indexed(node) if validated_by_nvidia_validator(card)]
        if not cards:
            return outcome
        if self.nodes.get(node) is None:
            # The node is gone: the garbage collector deletes its cards through their owner
            # reference; a condition written now would only churn objects about to vanish.
            log.debug("node gone; cards left to garbage collection", extra={"node": node})
            outcome.result = SKIPPED
            return outcome
        decided = verdict(node, self.pods.indexed(node))
        now = rfc3339(self.clock.now())
        for card in cards:
            name = str(card["metadata"]["name"])
            try:
                written = self.writer.apply(card, decided, now)
            except NotLeader:
                log.info("leadership lost; pass abandoned", extra={"node": node})
                outcome.result = SKIPPED
                return outcome
            except KubeError as error:
                outcome.result = ERROR
                outcome.failures.append(f"{name}: {type(error).__name__}: {error}")
                level = logging.ERROR if isinstance(error, Forbidden) else logging.WARNING
                hint = (
                    "check gpu-controller's RBAC for physicalgpus/status"
                    if isinstance(error, Forbidden)
                    else ""
                )
                log.log(
                    level,
                    "DriverReady write failed",
                    extra={"physicalgpu": name, "error": str(error), "hint": hint},
                )
                continue
            if written.written:
                outcome.written.append(name)
                self._report(written, decided, node)
        return outcome

    def _report(self, written: WriteResult, decided: Verdict, node: str) -> None:
        fields = {
            "physicalgpu": written.name,
            "node": node,
            "status": decided.status.value,
            "reason": decided.reason,
            "previousStatus": written.previous_status,
            "conditionMessage": decided.message,
        }
        log.info("DriverReady updated", extra=fields)
        if written.previous_status == decided.status.value or written.card is None:
            return  # only the message changed: no Event, the condition says it
        kind = "Normal" if decided.status is ConditionStatus.TRUE else "Warning"
        before = written.previous_status or "unset"
        message = f"{DRIVER_READY} {before} -> {decided.status.value}: {decided.message}"
        self.events.record(written.card, kind, decided.reason, message)
