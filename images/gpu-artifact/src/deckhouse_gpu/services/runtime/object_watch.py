# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Follows changes of a set of objects: list for a resourceVersion, then watch from it for good.

A watch asks for bookmarks and resumes from the last resourceVersion it saw, after the server's
timeout and after a failed connection alike; only an expired version (410) lists again, and
that list is reported (as ``None``) because changes may have been missed; callers then re-check
everything.
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
    listed: threading.Event | None = None,
) -> None:
    """Runs until ``stop``; ``on_change(None)`` after every relist, the event otherwise; ``listed``
    is set once the first list succeeded (what that list held is reported by no event). A failed
    list or watch is retried after ``backoff`` (exponential, jittered, at least the server's
    Retry-After); a watch that delivered starts the backoff afresh. Each watch lasts
    ``timeout_seconds`` to twice that, spread at random as client-go's reflector spreads them."""
    first = True
    failures = 0
    version: str | None = None  # None: list first
    while not stop.is_set():
        try:
            if version is None:
                listed_now = api.list(
                    resource,
                    label_selector=label_selector,
                    namespace=namespace,
                    field_selector=field_selector,
                )
                version = listed_now.resource_version
                failures = 0
                if listed is not None:
                    listed.set()
                if not first:
                    on_change(None)
                first = False
            while not stop.is_set():
                events = api.watch(
                    resource,
                    version,
                    label_selector,
                    namespace,
                    timeout_seconds=int(timeout_seconds * (1.0 + draw())),
                    field_selector=field_selector,
                )
                for event in events:
                    failures = 0
                    version = str(event.object.get("metadata", {}).get("resourceVersion", version))
                    if event.type != "BOOKMARK":
                        on_change(event)
                    if stop.is_set():
                        return
        except WatchExpired:
            log.info("watch expired; listing again", extra={"resource": resource.plural})
            version = None
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
    listed: threading.Event | None = None,
) -> threading.Thread:
    thread = threading.Thread(
        target=watch_objects,
        args=(api, resource, label_selector, on_change, stop, namespace),
        kwargs={"field_selector": field_selector, "listed": listed},
        name=f"watch-{resource.plural}",
        daemon=True,
    )
    thread.start()
    return thread
