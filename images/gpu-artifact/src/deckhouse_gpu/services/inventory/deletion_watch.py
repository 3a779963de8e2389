# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Notices when someone deletes one of this node's PhysicalGPUs, so the agent recreates it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from deckhouse_gpu.ports.kube import KubeAPI, Resource, WatchEvent
from deckhouse_gpu.services.runtime.object_watch import start_watch


def start_deletion_watch(
    api: KubeAPI,
    resource: Resource,
    label_selector: str,
    on_deleted: Callable[[str], None],
    stop: threading.Event,
) -> threading.Thread:
    def on_change(event: WatchEvent | None) -> None:
        if event is None:  # the watch restarted: a deletion may have been missed
            on_deleted("")
        elif event.type == "DELETED":
            on_deleted(str(event.object.get("metadata", {}).get("name", "")))

    return start_watch(api, resource, label_selector, on_change, stop)
