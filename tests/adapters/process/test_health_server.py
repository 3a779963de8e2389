# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import json
import urllib.error
import urllib.request

import pytest

from deckhouse_gpu.adapters.process.health_server import serve_health
from deckhouse_gpu.services.runtime.health import HealthState


def get(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture
def served():
    health = HealthState()
    now = [0.0]
    server = serve_health(health, ("127.0.0.1", 0), lambda: now[0], unhealthy_after=60)
    yield health, now, server.server_address[1]
    server.shutdown()


def test_ready_only_after_a_successful_pass(served):
    health, _, port = served
    assert get(port, "/readyz")[0] == 503
    health.record(True, None, 1.0)
    status, body = get(port, "/readyz")
    assert status == 200
    assert body == {"synced": True, "lastSyncOK": True, "consecutiveFailures": 0, "extraReady": True}


def test_failed_pass_is_unready_and_unhealthy_only_after_a_while(served):
    health, now, port = served
    health.record(True, None, 1.0)
    health.record(False, "Unavailable: apiserver down", 2.0)
    status, body = get(port, "/readyz")
    assert status == 503
    assert body["lastError"] == "Unavailable: apiserver down"
    assert get(port, "/healthz")[0] == 200
    now[0] = 100.0
    assert get(port, "/healthz")[0] == 503
    health.record(True, None, 101.0)
    assert get(port, "/healthz")[0] == 200


def test_healthz_counts_from_the_first_failure_not_from_start(served):
    health, now, port = served
    now[0] = 1000.0
    health.record(True, None, 990.0)
    health.record(False, "boom", 995.0)
    health.record(False, "boom", 999.0)
    assert get(port, "/healthz")[0] == 200  # failing for 5 s, although started 1000 s ago
    now[0] = 1056.0
    assert get(port, "/healthz")[0] == 503  # 61 s since the first failure of this run
    assert get(port, "/readyz")[1]["consecutiveFailures"] == 2


def test_never_synced_turns_unhealthy_after_the_grace(served):
    _, now, port = served
    assert get(port, "/healthz")[0] == 200
    now[0] = 61.0
    assert get(port, "/healthz")[0] == 503


def test_unknown_path_is_404(served):
    _, _, port = served
    assert get(port, "/metrics")[0] == 404


def test_an_extra_readiness_condition_must_hold_too():
    health = HealthState()
    health.record(True, None, 1.0)
    registered = [False]
    server = serve_health(health, ("127.0.0.1", 0), lambda: 0.0, also_ready=lambda: registered[0])
    try:
        port = server.server_address[1]
        status, body = get(port, "/readyz")
        assert (status, body["extraReady"]) == (503, False)
        registered[0] = True
        assert get(port, "/readyz")[0] == 200
    finally:
        server.shutdown()


def test_metrics_have_their_own_server_and_never_the_probe_address(served):
    # The probe address is the pod's, reached by anything on the pod network; /metrics listens on
    # loopback behind kube-rbac-proxy (adapters/process/metrics_server.py).
    from prometheus_client import CollectorRegistry, Counter  # noqa: PLC0415

    from deckhouse_gpu.adapters.process.metrics_server import serve_metrics  # noqa: PLC0415

    _, _, probes = served
    registry = CollectorRegistry()
    Counter("d8_gpu_test_things", "things", registry=registry).inc()
    server = serve_metrics(("127.0.0.1", 0), registry)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        with urllib.request.urlopen(url, timeout=2) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            assert "d8_gpu_test_things_total 1.0" in response.read().decode()
        assert get(probes, "/metrics")[0] == 404
        assert get(probes, "/readyz")[0] == 503  # the probes are there
        for probe in ("/healthz", "/readyz"):
            assert get(server.server_address[1], probe)[0] == 404  # and not on the metrics address
    finally:
        server.shutdown()
