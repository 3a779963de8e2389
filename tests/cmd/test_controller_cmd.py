# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The real gpu-controller process against the fake API server: client, watches, lease, HTTP, SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.cmd.gpu_controller import parse_args
from deckhouse_gpu.ports.controller_resources import LEASES, PODS
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig
from testkit.waiting import free_port, wait_for
from tests.support.controller_objects import (
    add_card,
    add_node,
    add_pod,
    crashing_status,
    driver_ready,
    ready_status,
    set_pod_status,
)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - a local http URL
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()
    except OSError:
        return 0, ""


def metric(text: str, name: str, **wanted: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in wanted.items()):
                return float(sample.value)
    return None


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(resources=(NODES, EVENTS, PHYSICAL_GPUS, PODS, LEASES)) as fake:
        add_node(fake.kube, "w1")
        add_card(fake.kube, "w1-gpu-0", "w1")
        add_pod(fake.kube, "val-1", "w1", crashing_status("nvidia.ko not loaded"))
        yield fake


def test_controller_process_end_to_end(server, tmp_path: Path):
    port, metrics_port = free_port(), free_port()
    argv = [
        sys.executable, "-m", "deckhouse_gpu.cmd.gpu_controller",
        "--kubeconfig", write_kubeconfig(tmp_path, server.url),
        "--listen-address", f"127.0.0.1:{port}",
        "--metrics-address", f"127.0.0.1:{metrics_port}",
        "--namespace", "d8-gpu",
    ]  # fmt: skip
    env = {**os.environ, "POD_NAME": "gpu-controller-abc"}
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for(lambda: get(f"http://127.0.0.1:{port}/readyz")[0] == 200, timeout=15)
        kube = server.kube
        wait_for(
            lambda: (driver_ready(kube, "w1-gpu-0") or {}).get("reason") == "ValidatorNotReady", timeout=10
        )
        condition = driver_ready(kube, "w1-gpu-0")
        assert condition is not None
        assert "nvidia.ko not loaded" in condition["message"]
        lease = kube.get(LEASES, "gpu-controller", "d8-gpu")
        assert lease["spec"]["holderIdentity"] == "gpu-controller-abc"

        set_pod_status(kube, "val-1", ready_status())  # delivered over the HTTP watch
        wait_for(lambda: (driver_ready(kube, "w1-gpu-0") or {}).get("status") == "True", timeout=10)
        status_patches = [r for r in server.requests if r.method == "PATCH" and r.path.endswith("/status")]
        assert all(r.content_type == "application/merge-patch+json" for r in status_patches)
        assert all(r.body["metadata"]["resourceVersion"] for r in status_patches)
        wait_for(lambda: len(kube.list(EVENTS, namespace="default").items) == 2)  # recorded after the write
        events = kube.list(EVENTS, namespace="default").items
        assert sorted(e["reason"] for e in events) == ["ValidatorNotReady", "ValidatorReady"]
        assert events[0]["source"] == {"component": "gpu-controller", "host": "gpu-controller-abc"}

        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 404  # not on the probe address
        code, text = get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert code == 200
        assert metric(text, "d8_gpu_controller_is_leader") == 1.0
        assert metric(text, "d8_gpu_physicalgpus", node="w1", model="a30-pcie") == 1.0
        ready_series = {"physicalgpu": "w1-gpu-0", "condition": "DriverReady", "status": "true"}
        scrape = lambda: get(f"http://127.0.0.1:{metrics_port}/metrics")[1]  # noqa: E731
        wait_for(lambda: metric(scrape(), "d8_gpu_physicalgpu_condition", **ready_series) == 1.0)
        assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        # The lease is handed back on the way out, so a new replica need not wait for it to expire.
        assert "holderIdentity" not in kube.get(LEASES, "gpu-controller", "d8-gpu")["spec"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        logs = process.stderr.read() if process.stderr else ""
    lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert any(line["msg"] == "DriverReady updated" and line["physicalgpu"] == "w1-gpu-0" for line in lines)
    assert all(line["component"] == "gpu-controller" for line in lines)


def test_arguments_and_defaults(monkeypatch):
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    args = parse_args([])
    assert args.namespace == "d8-gpu"
    assert args.validator_selector == "app=nvidia-driver-validator"
    assert args.listen == ("0.0.0.0", 8080)  # noqa: S104
    assert args.metrics == ("127.0.0.1", 9080)  # loopback: the pod's kube-rbac-proxy serves it
    assert args.leader_elect is True
    assert parse_args(["--no-leader-elect"]).leader_elect is False
    monkeypatch.setenv("POD_NAMESPACE", "d8-other")
    assert parse_args([]).namespace == "d8-other"


@pytest.mark.parametrize(
    "argv",
    [["--validator-selector", "app in ("], ["--listen-address", "localhost"], ["--metrics-address", ":x"]],
)
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert "error" in capsys.readouterr().err
