"""Notices when someone deletes one of this node's PhysicalGPUs, so the agent recreates it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from deckhouse_gpu.ports.kube import KubeAPI, KubeError, Resource, WatchExpired

log = logging.getLogger(__name__)


def watch_deletions(
    api: KubeAPI,
    resource: Resource,
    label_selector: str,
    on_deleted: Callable[[str], None],
    stop: threading.Event,
    timeout_seconds: int = 300,
    retry_seconds: float = 5.0,
) -> None:
    """Runs until ``stop``: list for a resourceVersion, watch from it, start over when expired."""
    while not stop.is_set():
        try:
            version = api.list(resource, label_selector=label_selector).resource_version
            while not stop.is_set():
                for event in api.watch(resource, version, label_selector, timeout_seconds=timeout_seconds):
                    version = str(event.object.get("metadata", {}).get("resourceVersion", version))
                    if event.type == "DELETED":
                        on_deleted(str(event.object.get("metadata", {}).get("name", "")))
                    if stop.is_set():
                        return
        except WatchExpired:
            log.debug("watch expired; listing again", extra={"resource": resource.plural})
        except KubeError as error:
            log.warning("watch failed; retrying", extra={"resource": resource.plural, "error": str(error)})
            stop.wait(retry_seconds)


def start_deletion_watch(
    api: KubeAPI,
    resource: Resource,
    label_selector: str,
    on_deleted: Callable[[str], None],
    stop: threading.Event,
) -> threading.Thread:
    thread = threading.Thread(
        target=watch_deletions,
        args=(api, resource, label_selector, on_deleted, stop),
        name="deletion-watch",
        daemon=True,
    )
    thread.start()
    return thread
