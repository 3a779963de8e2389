# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-controller's /metrics, /healthz and /readyz, parsed as Prometheus parses them; /metrics on
an address of its own (loopback in a cluster, behind kube-rbac-proxy), the probes on another."""

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.adapters.metrics.controller_metrics import ControllerMetrics
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics, serve_probes
from deckhouse_gpu.cmd.gpu_controller import ControllerOptions, start_controller
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.waiting import wait_for
from tests.support.controller_objects import add_card, add_node, add_pod, card, ready_status

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    parsed: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            parsed[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return parsed


def series(parsed: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: value for (n, labels), value in parsed.items() if n == name}


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    return frozenset(kv.items())


def condition(obj: dict[str, Any], kind: str, status: str) -> dict[str, Any]:
    obj["status"].setdefault("conditions", []).append({"type": kind, "status": status})
    return obj


def test_inventory_counts_and_kube_state_metrics_style_conditions():
    a30 = condition(card("w1-gpu-0", "w1"), "DriverReady", "True")
    a30["status"]["currentState"] = {"driverType": "Nvidia"}
    twin = condition(card("w1-gpu-1", "w1"), "HardwareHealthy", "False")
    twin["status"]["currentState"] = {"driverType": "Nvidia"}
    vfio = card("w2-gpu-0", "w2", model="h100-pcie")
    vfio["status"]["currentState"] = {"driverType": "VFIO"}
    metrics = ControllerMetrics(lambda: [a30, twin, vfio], lambda: True)
    parsed = samples(generate_latest(metrics.registry).decode())

    assert series(parsed, "d8_gpu_physicalgpus") == {
        labels(node="w1", vendor="nvidia", model="a30-pcie", driver_type="Nvidia"): 2.0,
        labels(node="w2", vendor="nvidia", model="h100-pcie", driver_type="VFIO"): 1.0,
    }
    conditions = series(parsed, "d8_gpu_physicalgpu_condition")
    assert len(conditions) == 3 * 2 * 3  # cards x conditions x statuses
    one = lambda name, node, kind, status: labels(physicalgpu=name, node=node, condition=kind, status=status)  # noqa: E731
    assert conditions[one("w1-gpu-0", "w1", "DriverReady", "true")] == 1.0
    assert conditions[one("w1-gpu-0", "w1", "DriverReady", "false")] == 0.0
    assert conditions[one("w1-gpu-0", "w1", "DriverReady", "unknown")] == 0.0
    assert conditions[one("w1-gpu-1", "w1", "HardwareHealthy", "false")] == 1.0
    assert conditions[one("w1-gpu-1", "w1", "DriverReady", "unknown")] == 1.0  # not set yet
    assert sum(v for k, v in conditions.items() if ("physicalgpu", "w2-gpu-0") in k) == 2.0
    assert parsed[("d8_gpu_controller_is_leader", frozenset())] == 1.0


def test_counter_and_histogram_of_passes():
    metrics = ControllerMetrics(lambda: [], lambda: True)
    metrics.observe_reconcile("success", 0.003)
    metrics.observe_reconcile("success", 0.2)
    metrics.observe_reconcile("error", 1.5)
    parsed = samples(generate_latest(metrics.registry).decode())
    assert series(parsed, "d8_gpu_controller_reconciles_total") == {
        labels(result="success"): 2.0,
        labels(result="error"): 1.0,
        labels(result="skipped"): 0.0,
    }
    assert parsed[("d8_gpu_controller_reconcile_duration_seconds_count", frozenset())] == 3.0
    assert parsed[("d8_gpu_controller_reconcile_duration_seconds_bucket", labels(le="0.005"))] == 1.0
    assert parsed[("d8_gpu_controller_reconcile_duration_seconds_bucket", labels(le="+Inf"))] == 3.0


def test_follower_exports_no_inventory():
    metrics = ControllerMetrics(lambda: None, lambda: False)
    parsed = samples(generate_latest(metrics.registry).decode())
    assert parsed[("d8_gpu_controller_is_leader", frozenset())] == 0.0
    assert not series(parsed, "d8_gpu_physicalgpus")
    assert not series(parsed, "d8_gpu_physicalgpu_condition")


@pytest.fixture
def running() -> Iterator[tuple[MemoryKube, object, str, str]]:
    kube = MemoryKube()
    add_node(kube, "w1")
    add_card(kube, "w1-gpu-0", "w1")
    add_card(kube, "w1-gpu-1", "w1")
    add_pod(kube, "val-1", "w1", ready_status())
    stop = threading.Event()
    settings = ControllerSettings(debounce_seconds=0.01, resync_seconds=3600, watch_timeout_seconds=2)
    replica = start_controller(kube, stop, ControllerOptions(settings, leader_elect=False, identity="c-0"))
    controller = replica.controller
    metrics = serve_metrics(("127.0.0.1", 0), replica.metrics.registry)
    probes = serve_probes(("127.0.0.1", 0), controller.health, controller.readiness)
    urls = [f"http://127.0.0.1:{server.server_address[1]}" for server in (metrics, probes)]
    yield kube, replica, urls[0], urls[1]
    metrics.shutdown()
    probes.shutdown()
    stop.set()
    replica.shutdown()


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - a local http URL
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def test_scrape_shows_the_live_inventory_and_no_stale_series(running):
    kube, replica, url, _ = running
    wait_for(replica.controller.idle)

    def condition_series() -> dict[frozenset[tuple[str, str]], float]:
        return series(samples(fetch(f"{url}/metrics")[1]), "d8_gpu_physicalgpu_condition")

    wait_for(
        lambda: (
            condition_series().get(
                labels(physicalgpu="w1-gpu-1", node="w1", condition="DriverReady", status="true")
            )
            == 1.0
        )
    )
    kube.delete(PHYSICAL_GPUS, "w1-gpu-1")
    wait_for(lambda: not any(("physicalgpu", "w1-gpu-1") in k for k in condition_series()))
    parsed = samples(fetch(f"{url}/metrics")[1])
    assert series(parsed, "d8_gpu_physicalgpus") == {
        labels(node="w1", vendor="nvidia", model="a30-pcie", driver_type="None"): 1.0
    }
    assert parsed[("d8_gpu_controller_reconciles_total", labels(result="success"))] >= 1.0


def test_probes_and_unknown_paths(running):
    _, replica, metrics, url = running
    wait_for(replica.controller.synced)
    assert fetch(f"{url}/readyz") == (200, json.dumps({"ok": True, "detail": "caches synced"}))
    assert fetch(f"{url}/healthz")[0] == 200
    code, body = fetch(f"{url}/nope")
    assert code == 404
    assert "/healthz" in body
    assert fetch(f"{url}/metrics")[0] == 404  # the pod network reaches the probes, not the metrics
    assert fetch(f"{metrics}/readyz")[0] == 404


def test_not_ready_before_the_caches_are_filled():
    server = serve_probes(("127.0.0.1", 0), lambda: (True, "ok"), lambda: (False, "caches not synced yet"))
    try:
        code, body = fetch(f"http://127.0.0.1:{server.server_address[1]}/readyz")
        assert code == 503
        assert json.loads(body) == {"ok": False, "detail": "caches not synced yet"}
    finally:
        server.shutdown()
