# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube.watch: live streams, the server's timeout, connection-close streams and expiry."""

from __future__ import annotations

import time

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Invalid, WatchExpired
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.fake_apiserver import FakeApiServer
from tests.support import kube_client_fixtures
from tests.support.kube_client_fixtures import gpu, last, write_kubeconfig

# The shared fixtures, bound here so that pytest finds them for this module's tests.
server, kube = kube_client_fixtures.server, kube_client_fixtures.kube
# Long, so that "delivered before the watch ended" needs no tight clock on a busy machine.
WATCH_SECONDS = 30


def test_watch_streams_live_events(kube, server):
    server.kube.create(PHYSICAL_GPUS, gpu("old", {"vendor": "nvidia"}))
    start = kube.list(PHYSICAL_GPUS).resource_version
    events = kube.watch(PHYSICAL_GPUS, start, label_selector="vendor=nvidia", timeout_seconds=WATCH_SECONDS)
    sent = last(server)
    assert sent.query == {
        "watch": "true",
        "resourceVersion": start,
        "timeoutSeconds": str(WATCH_SECONDS),
        "allowWatchBookmarks": "true",
        "labelSelector": "vendor=nvidia",
    }
    began = time.monotonic()
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-b", {"vendor": "amd"}))  # filtered out
    server.kube.create(PHYSICAL_GPUS, gpu("gpu-a", {"vendor": "nvidia"}))
    server.kube.patch(PHYSICAL_GPUS, "gpu-a", {"spec": {"index": 1}})
    server.kube.delete(PHYSICAL_GPUS, "gpu-a")
    received = [next(events) for _ in range(3)]
    # Delivered as they happened: events held back to the watch's end would come after its timeout.
    assert time.monotonic() - began < WATCH_SECONDS / 2
    assert [(e.type, e.object["metadata"]["name"]) for e in received] == [
        ("ADDED", "gpu-a"),
        ("MODIFIED", "gpu-a"),
        ("DELETED", "gpu-a"),
    ]
    assert received[2].object["spec"] == {"index": 1}


def test_watch_ends_at_the_servers_timeout(kube, server):
    start = server.kube.resource_version
    server.kube.create(NODES, {"metadata": {"name": "node-a"}})
    events = list(kube.watch(NODES, start, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "node-a")]


def test_watch_over_a_connection_close_stream(tmp_path):
    with FakeApiServer(chunked=False) as server:
        kube = load_kube(write_kubeconfig(tmp_path, server.url), read_timeout=WATCH_SECONDS)
        events = kube.watch(NODES, server.kube.resource_version, timeout_seconds=WATCH_SECONDS)
        began = time.monotonic()
        server.kube.create(NODES, {"metadata": {"name": "node-a"}})
        event = next(events)
        assert time.monotonic() - began < WATCH_SECONDS / 2
        assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "node-a")
        kube.close()


def test_watch_expiry(tmp_path):
    with FakeApiServer(MemoryKube(history=2)) as server:
        kube = load_kube(write_kubeconfig(tmp_path, server.url), read_timeout=5)
        for index in range(4):
            server.kube.create(NODES, {"metadata": {"name": f"n{index}"}})
        with pytest.raises(WatchExpired, match="too old resource version"):
            list(kube.watch(NODES, "1", timeout_seconds=5))
        assert [e.object["metadata"]["name"] for e in kube.watch(NODES, "2", timeout_seconds=0)] == [
            "n2",
            "n3",
        ]
        kube.close()


def test_watch_rejects_a_bad_selector_at_once(kube):
    with pytest.raises(Invalid):
        kube.watch(NODES, "1", label_selector="a in", timeout_seconds=5)
