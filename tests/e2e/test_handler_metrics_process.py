# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's /metrics from the real process: a kubelet prepares and unprepares claims over
the socket, and Prometheus' parser reads what the handler's metrics address then serves (in a
cluster, the loopback address its pod's kube-rbac-proxy fronts; the probe address has no
/metrics)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig
from testkit.prepare_world import allocate
from testkit.waiting import free_port, wait_for
from tests.e2e.sim_node import NODE, build_host, handler_args, ref
from tests.support.fake_kubelet import FakeKubelet

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def node() -> Iterator[tuple[FakeApiServer, FakeKubelet, int, int]]:
    short = Path(tempfile.mkdtemp(prefix="gpu-"))  # Unix socket paths have at most 107 bytes
    root = build_host(short / "host").root
    resources = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS)
    with FakeApiServer(resources=resources) as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        kubeconfig = write_kubeconfig(short, server.url)
        agent = [sys.executable, "-m", "deckhouse_gpu.cmd.gpu_node_agent", "--once", "--node-name", NODE,
                 "--host-root", str(root), "--kubeconfig", kubeconfig]  # fmt: skip
        subprocess.run(agent, capture_output=True, timeout=60, check=True)
        ready = {"type": DRIVER_READY, "status": "True", "reason": "ValidatorReady", "message": "",
                 "lastTransitionTime": "2026-11-21T00:00:00Z"}  # fmt: skip
        for card in server.kube.list(PHYSICAL_GPUS).items:
            status = {"status": {"conditions": [ready]}}
            server.kube.patch(PHYSICAL_GPUS, card["metadata"]["name"], status, subresource="status")
        port, probes = free_port(), free_port()
        log = short / "handler.log"
        with log.open("ab") as stderr:
            handler = subprocess.Popen(
                [sys.executable, "-m", "deckhouse_gpu.simulator.gpu_handler", "run",
                 *handler_args(root, kubeconfig), "--health-address", f"127.0.0.1:{probes}",
                 "--metrics-address", f"127.0.0.1:{port}"],
                stderr=stderr, env={**os.environ, "LOG_LEVEL": "info"},
            )  # fmt: skip
        # The socket file appears before the plugin listens: wait for the handler to say it serves.
        serving = lambda: log.exists() and "kubelet plugin serving" in log.read_text()  # noqa: E731
        kubelet = FakeKubelet(str(root / "var/lib/kubelet/plugins_registry"))
        try:
            wait_for(serving, timeout=20, what="the plugin serving")
            kubelet.wait_for_plugins(1, timeout=20)
            yield server, kubelet, port, probes
        except BaseException:
            print(log.read_text()[-4000:])
            raise
        finally:
            kubelet.close()
            handler.send_signal(signal.SIGTERM)
            handler.wait(timeout=15)
            shutil.rmtree(short, ignore_errors=True)


def test_prepares_unprepares_and_publishes_show_on_the_metrics_port(node):
    server, kubelet, port, _ = node
    wait_for(lambda: value(scrape(port), "d8_gpu_handler_slice_publishes_total", result="changed") >= 1)
    plugin = kubelet.active("gpu.deckhouse.io")
    whole = ref(allocate(server.kube, "whole", "gpu-0000-31-00-0"))
    mig = ref(allocate(server.kube, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0"))
    results = plugin.prepare([whole, mig])
    assert [r.error for r in results.values()] == ["", ""]
    seen = scrape(port)
    assert value(seen, "d8_gpu_handler_prepare_duration_seconds_count", offer_type="Physical") == 1
    assert value(seen, "d8_gpu_handler_prepare_duration_seconds_count", offer_type="MIG") == 1
    assert value(seen, "d8_gpu_handler_prepared_claims", offer_type="Physical") == 1
    assert value(seen, "d8_gpu_handler_prepared_claims", offer_type="MIG") == 1
    assert value(seen, "d8_gpu_handler_mig_instances_created_total") == 1
    assert value(seen, "d8_gpu_handler_checkpoint_size_bytes") > 0
    assert value(seen, "d8_gpu_handler_api_writes_total", resource="ResourceClaim") >= 2  # status.devices
    assert plugin.unprepare([whole, mig]) == {whole.uid: "", mig.uid: ""}
    seen = scrape(port)
    assert value(seen, "d8_gpu_handler_mig_instances_destroyed_total") == 1
    assert value(seen, "d8_gpu_handler_unprepare_duration_seconds_count", offer_type="MIG") == 1
    assert value(seen, "d8_gpu_handler_prepared_claims", offer_type="MIG") == 0
    assert not any(name.endswith("_created") for name, _ in seen)  # no creation-time series
    assert value(seen, "process_resident_memory_bytes") > 0


def test_the_probe_address_serves_the_probes_and_no_metrics(node):
    _, _, port, probes = node
    wait_for(lambda: value(scrape(port), "d8_gpu_handler_slice_publishes_total", result="changed") >= 1)
    with urllib.request.urlopen(f"http://127.0.0.1:{probes}/healthz", timeout=2) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{probes}/metrics", timeout=2)
    assert refused.value.code == 404  # the pod network reaches this address; the claims' names stay off it
