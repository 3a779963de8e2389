# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Status writes without lost updates: patch computed from a fresh read, guarded by its resourceVersion."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from deckhouse_gpu.ports.kube import Conflict, KubeAPI, Object, Resource

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5


def patch_status(
    api: KubeAPI,
    resource: Resource,
    stored: Object,
    make_patch: Callable[[dict[str, Any] | None], dict[str, Any]],
    namespace: str | None = None,
) -> tuple[Object, dict[str, Any]]:
    """Applies ``make_patch(status)``; on a conflict reads again and recomputes.

    Returns the object as stored afterwards and the status patch that was sent (empty when
    nothing needed to change).
    """
    name = str(stored["metadata"]["name"])
    for attempt in range(MAX_CONFLICT_RETRIES + 1):
        patch = make_patch(stored.get("status"))
        if not patch:
            return stored, patch
        body = {"metadata": {"resourceVersion": stored["metadata"].get("resourceVersion")}, "status": patch}
        try:
            return api.patch(resource, name, body, subresource="status", namespace=namespace), patch
        except Conflict:
            if attempt == MAX_CONFLICT_RETRIES:
                raise
            log.debug("status conflict, re-reading", extra={"object": name, "attempt": attempt + 1})
            stored = api.get(resource, name, namespace=namespace)
    raise AssertionError("unreachable")
