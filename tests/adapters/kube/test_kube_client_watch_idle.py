# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""ClientKube.watch notices a silent stream: nothing for ``watch_idle_seconds`` ends it quietly, as
the server's timeout does, so the caller resumes from its resourceVersion on a new connection; a
stream that keeps sending lives on. The real API server and a silent proxy:
tests/real/test_watch_silent.py."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.adapters.kube.kube_transport import kubeconfig_transport
from deckhouse_gpu.ports.kube import NODES
from testkit.fake_apiserver import FakeApiServer
from tests.support.kube_client_fixtures import write_kubeconfig

IDLE = 1.0
# The server's own end, far off: only the idle bound can end the stream in these tests.
TIMEOUT_SECONDS = 60


def client(tmp_path: Path, server: FakeApiServer) -> ClientKube:
    transport = kubeconfig_transport(write_kubeconfig(tmp_path, server.url), None)
    return ClientKube(transport, connect_timeout=1, read_timeout=5, watch_idle_seconds=IDLE)


def test_a_silent_watch_ends_without_an_error_after_the_idle_bound(tmp_path, caplog) -> None:
    with FakeApiServer() as server:
        kube = client(tmp_path, server)
        began = time.monotonic()
        with caplog.at_level(logging.INFO, logger="deckhouse_gpu.adapters.kube.kube_client"):
            events = list(kube.watch(NODES, server.kube.resource_version, timeout_seconds=TIMEOUT_SECONDS))
        waited = time.monotonic() - began
        kube.close()
    assert events == []
    assert IDLE <= waited < TIMEOUT_SECONDS / 2
    assert [r.message for r in caplog.records] == ["watch silent; opening it again"]
    assert getattr(caplog.records[0], "idleSeconds") == IDLE  # noqa: B009 - an extra field


def test_a_watch_that_keeps_sending_is_not_ended_by_the_idle_bound(tmp_path) -> None:
    with FakeApiServer() as server:
        kube = client(tmp_path, server)
        start = server.kube.resource_version
        stop = threading.Event()

        def every_half_bound() -> None:
            for index in range(6):  # three idle bounds in all, none of them silent
                if stop.wait(IDLE / 2):
                    return
                server.kube.create(NODES, {"metadata": {"name": f"n{index}"}})

        writer = threading.Thread(target=every_half_bound)
        writer.start()
        names = []
        for event in kube.watch(NODES, start, timeout_seconds=TIMEOUT_SECONDS):
            names.append(event.object["metadata"]["name"])
            if len(names) == 6:
                break
        stop.set()
        writer.join()
        kube.close()
    assert names == [f"n{index}" for index in range(6)]


def test_a_short_server_timeout_keeps_its_own_read_timeout(tmp_path) -> None:
    """A watch the server ends before the idle bound reads on to its end plus the read timeout."""
    with FakeApiServer() as server:
        kube = load_kube(write_kubeconfig(tmp_path, server.url), read_timeout=5)
        server.kube.create(NODES, {"metadata": {"name": "n1"}})
        events = list(kube.watch(NODES, "0", timeout_seconds=1))
        kube.close()
    assert [e.object["metadata"]["name"] for e in events] == ["n1"]
