# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes Events about our objects: short, actionable, attributed to the reporting component."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.kube import EVENTS, KubeAPI, KubeError

log = logging.getLogger(__name__)

# Events about cluster-scoped objects live in "default", as kubectl describe expects (and as the
# API server's validation of events without eventTime allows).
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
# What the API server keeps of an Event's message (events.k8s.io caps its note at 1 kB as well).
MESSAGE_LIMIT = 1024
_NAME_LIMIT = 253
_SUFFIX_LENGTH = 17  # "." and 16 hex digits


def event_name(regarding: str) -> str:
    """A unique Event name that stays a DNS subdomain of at most 253 characters, whatever the
    length of the object's own name (a PhysicalGPU name may already use all 253)."""
    stem = regarding[: _NAME_LIMIT - _SUFFIX_LENGTH].rstrip("-.") or "object"
    return f"{stem}.{uuid.uuid4().hex[:16]}"


class EventRecorder:
    def __init__(self, api: KubeAPI, component: str, host: str, clock: Clock) -> None:
        self.api = api
        self.component = component
        self.host = host
        self.clock = clock

    def record(self, regarding: dict[str, Any], kind: str, reason: str, message: str) -> None:
        """Best effort: an event that cannot be written is logged, never fails the caller."""
        metadata = regarding.get("metadata", {})
        namespace = metadata.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
        now = self.clock.now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(str(metadata.get("name") or "object")),
                "namespace": namespace,
            },
            "involvedObject": {
                "apiVersion": regarding.get("apiVersion"),
                "kind": regarding.get("kind"),
                "name": metadata.get("name"),
                "uid": metadata.get("uid"),
                **({"namespace": metadata["namespace"]} if metadata.get("namespace") else {}),
            },
            "type": kind,
            "reason": reason,
            "message": message[:MESSAGE_LIMIT],
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": f"gpu.deckhouse.io/{self.component}",
            "reportingInstance": self.host,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
        }
        try:
            self.api.create(EVENTS, event)
        except KubeError as error:
            log.warning("event not recorded", extra={"reason": reason, "error": str(error)})
