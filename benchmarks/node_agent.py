# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-node-agent: scan time, pass time and process memory (targets: scan < 20 ms, RSS < 40 MiB)."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from benchmarks.common import GPUS, NODE, OTHER_DEVICES, line, measure_process, report, report_memory, timed
from benchmarks.in_cluster import launcher_argv, pod_api_server
from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, KubeAPI
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync, read_host
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig
from testkit.waiting import free_port


def make_sync(api: KubeAPI, host: HostBuilder) -> InventorySync:
    return InventorySync(api, SysfsHost(host.root), NODE, EventRecorder(api, "bench", NODE, SystemClock()))


def bench_scan(host: HostBuilder) -> None:
    reader = SysfsHost(host.root)
    reader.pci_ids()  # parsed once at start in the agent
    print(f"gpu-node-agent scan ({GPUS} GPUs among {GPUS + OTHER_DEVICES} PCI functions; target < 20 ms)")
    report("sysfs scan only", timed(reader.scan_pci, 200))
    report("scan + node facts + desired objects", timed(lambda: read_host(reader, NODE), 200))
    started = time.perf_counter()
    SysfsHost(host.root).pci_ids()
    line("pci.ids parse (once per start or change)", (time.perf_counter() - started) * 1000, "ms", 2)
    real = SysfsHost("/")  # this machine's own pci.ids, if it has one (Debian: package hwdata)
    started = time.perf_counter()
    if real.pci_ids() is not None:
        line("pci.ids parse, this machine's full database", (time.perf_counter() - started) * 1000, "ms", 2)


def bench_pass(label: str, api: KubeAPI, host: HostBuilder) -> None:
    sync = make_sync(api, host)
    report(f"{label}: first pass, creates {GPUS}", timed(sync.sync, 1))
    report(f"{label}: pass, nothing to change", timed(sync.sync, 50))


def bench_passes(host: HostBuilder, workdir: Path) -> None:
    print("gpu-node-agent scan and publish (one pass: scan, list, compare, write what changed)")
    memory = MemoryKube()
    memory.create(NODES, {"metadata": {"name": NODE}})
    bench_pass("in-memory API", memory, host)
    with FakeApiServer() as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        bench_pass("kubernetes client, local HTTP", load_kube(write_kubeconfig(workdir, server.url)), host)


def readyz(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def bench_process(host: HostBuilder, workdir: Path) -> None:
    print("gpu-node-agent process (real entry point and client, local fake API server; target RSS <= 40 MiB)")
    with pod_api_server(workdir) as pod:
        if pod is not None:
            server, ca, env = pod
            server.kube.create(NODES, {"metadata": {"name": NODE}})
            port = free_port()
            argv = [
                "--node-name",
                NODE,
                "--host-root",
                str(host.root),
                "--health-address",
                f"127.0.0.1:{port}",
                "--metrics-address",
                "127.0.0.1:0",
            ]
            launcher = launcher_argv("node_agent", workdir, ca, argv)
            report_process(
                "in a pod (in-cluster config, https)",
                measure_process(launcher, lambda: readyz(port), env=env),
            )
    with FakeApiServer() as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        port = free_port()
        argv = ["--node-name", NODE, "--host-root", str(host.root), "--kubeconfig",
                write_kubeconfig(workdir, server.url), "--health-address", f"127.0.0.1:{port}",
                "--metrics-address", "127.0.0.1:0"]  # fmt: skip
        measured = measure_process(["-m", "deckhouse_gpu.cmd.gpu_node_agent", *argv], lambda: readyz(port))
        report_process("with --kubeconfig (the same client, configured from a file)", measured)


def report_process(label: str, measured: tuple[float, dict[str, float]] | None) -> None:
    if measured is None:
        print(f"  {label}: the agent never became ready")
        return
    startup, memory = measured
    print(f"  {label}")
    line("  start to first successful pass (readyz 200)", startup * 1000, "ms", 0)
    report_memory(memory)


def run(host: HostBuilder, workdir: Path) -> None:
    bench_scan(host)
    bench_passes(host, workdir)
    bench_process(host, workdir)
