# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-controller's and gpu-dra-controller's memory, each started as in a pod (in-cluster config over
HTTPS with a service-account token) against a fake API server with one GPU node, and ready."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from benchmarks.common import NODE, line, measure_process, report_memory
from benchmarks.in_cluster import launcher_argv, pod_api_server
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, LEASES
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from testkit.waiting import free_port

RESOURCES = (NODES, EVENTS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, PODS, LEASES, DEVICE_CLASSES)


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def bench(label: str, module: str, argv: list[str], workdir: Path) -> None:
    print(f"{label} process in a pod (in-cluster config, https; real entry point and client)")
    with pod_api_server(workdir, RESOURCES) as pod:
        if pod is None:
            return
        server, ca, env = pod
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        port = free_port()
        common = ["--listen-address", f"127.0.0.1:{port}", "--metrics-address", "127.0.0.1:0"]
        launcher = launcher_argv(module, workdir, ca, [*argv, *common])
        measured = measure_process(launcher, lambda: ready(port), env=env)
        if measured is None:
            print(f"  {label} never became ready")
            return
        startup, memory = measured
        line("  start to ready (readyz 200)", startup * 1000, "ms", 0)
        report_memory(memory)


def run(workdir: Path) -> None:
    bench("gpu-controller", "controller", ["--namespace", "d8-gpu"], workdir)
    bench("gpu-dra-controller", "dra_controller", ["run", "--namespace", "d8-gpu", "--no-webhook"], workdir)
