# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Follows changes of a set of objects: list for a resourceVersion, watch from it, start over.

The list that starts each round is also reported (as ``None``), because changes may have been
missed while the watch was down; callers then re-check everything.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from deckhouse_gpu.domain.backoff import Backoff
from deckhouse_gpu.ports.kube import KubeAPI, KubeError, Resource, WatchEvent, WatchExpired

log = logging.getLogger(__name__)

# The first retry within a second, then doubling to 30 s, as client-go's reflector backs off.
RETRY = Backoff(initial=0.8, cap=30.0)


def watch_objects(
    api: KubeAPI,
    resource: Resource,
    label_selector: str | None,
    on_change: Callable[[WatchEvent | None], None],
    stop: threading.Event,
    namespace: str | None = None,
    timeout_seconds: int = 300,
    backoff: Backoff = RETRY,
    field_selector: str | None = None,
    draw: Callable[[], float] = random.random,
) -> None:
    """Runs until ``stop``; ``on_change(None)`` after every (re)list, the event otherwise. A failed
    list or watch is retried after ``backoff`` (exponential, jittered, at least the server's
    Retry-After); a successful list starts the backoff afresh."""
    first = True
    failures = 0
    while not stop.is_set():
        try:
            listed = api.list(
                resource, label_selector=label_selector, namespace=namespace, field_selector=field_selector
            )
            version = listed.resource_version
            failures = 0
            if not first:
                on_change(None)
            first = False
            while not stop.is_set():
                events = api.watch(
                    resource,
                    version,
                    label_selector,
                    namespace,
                    timeout_seconds=timeout_seconds,
                    field_selector=field_selector,
                )
                for event in events:
                    version = str(event.object.get("metadata", {}).get("resourceVersion", version))
                    on_change(event)
                    if stop.is_set():
                        return
        except WatchExpired:
            log.debug("watch expired; listing again", extra={"resource": resource.plural})
        except KubeError as error:
            failures += 1
            delay = backoff.delay(failures, draw(), getattr(error, "retry_after", None))
            log.warning(
                "watch failed; retrying",
                extra={"resource": resource.plural, "error": str(error), "retrySeconds": round(delay, 3)},
            )
            stop.wait(delay)


def start_watch(
    api: KubeAPI,
    resource: Resource,
    label_selector: str | None,
    on_change: Callable[[WatchEvent | None], None],
    stop: threading.Event,
    namespace: str | None = None,
    field_selector: str | None = None,
) -> threading.Thread:
    thread = threading.Thread(
        target=watch_objects,
        args=(api, resource, label_selector, on_change, stop, namespace),
        kwargs={"field_selector": field_selector},
        name=f"watch-{resource.plural}",
        daemon=True,
    )
    thread.start()
    return thread
