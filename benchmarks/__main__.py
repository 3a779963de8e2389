"""`make bench`: figures for gpu-node-agent, printed, never asserted.

Node shape: 8 H100 GPUs among 200 other PCI functions (bridges, NICs, NVMe, the BMC's VGA,
GPU audio and NVSwitch functions), as on an HGX node.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.support.fake_apiserver import FakeApiServer
from tests.support.kubeconfig import write_kubeconfig

from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.adapters.sim.host_builder import HostBuilder
from deckhouse_gpu.adapters.sysfs_host import SysfsHost
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, KubeAPI
from deckhouse_gpu.services.events import EventRecorder
from deckhouse_gpu.services.inventory_sync import InventorySync, read_host

GPUS = 8
OTHER_DEVICES = 200
NODE = "bench-node"


def build_host(root: Path) -> HostBuilder:
    host = HostBuilder(root).standard_node()
    host.add_other_devices(OTHER_DEVICES)
    for index in range(GPUS):
        host.add_gpu("h100-80gb", f"0000:{0x18 + index * 0x10:02x}:00.0", iommu_group=index)
    return host


def timed(action: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    median = statistics.median(ordered)
    print(f"  {name:<52} p50 {median:7.2f} ms   p95 {p95:7.2f} ms   n={len(ordered)}")


def make_sync(api: KubeAPI, host: HostBuilder) -> InventorySync:
    return InventorySync(api, SysfsHost(host.root), NODE, EventRecorder(api, "bench", NODE, SystemClock()))


def bench_scan(host: HostBuilder) -> None:
    reader = SysfsHost(host.root)
    reader.pci_ids()  # parsed once at start in the agent
    print(f"scan ({GPUS} GPUs among {GPUS + OTHER_DEVICES} PCI functions; target < 20 ms)")
    report("sysfs scan only", timed(reader.scan_pci, 200))
    report("scan + node facts + desired objects", timed(lambda: read_host(reader, NODE), 200))
    started = time.perf_counter()
    SysfsHost(host.root).pci_ids()
    print(
        f"  {'pci.ids parse (once per start or change)':<52} {(time.perf_counter() - started) * 1000:7.2f} ms"
    )
    real = SysfsHost("/")  # this machine's own pci.ids, if it has one (Debian: package hwdata)
    started = time.perf_counter()
    if real.pci_ids() is not None:
        elapsed = (time.perf_counter() - started) * 1000
        print(f"  {'pci.ids parse, this machine full database':<52} {elapsed:7.2f} ms")


def bench_pass(label: str, api: KubeAPI, host: HostBuilder) -> None:
    sync = make_sync(api, host)
    report(f"{label}: first pass, creates {GPUS}", timed(sync.sync, 1))
    report(f"{label}: pass, nothing to change", timed(sync.sync, 50))


def bench_passes(host: HostBuilder, workdir: Path) -> None:
    print("scan and publish (one agent pass: scan, list, compare, write what changed)")
    memory = MemoryKube()
    memory.create(NODES, {"metadata": {"name": NODE}})
    bench_pass("in-memory API", memory, host)
    with FakeApiServer() as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        from deckhouse_gpu.adapters.kube_client import load_kube  # noqa: PLC0415

        bench_pass(
            "kubernetes client over local HTTP", load_kube(write_kubeconfig(workdir, server.url)), host
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def bench_rss(host: HostBuilder, workdir: Path) -> None:
    print("gpu-node-agent process (real entry point and client, local fake API server; target RSS < 40 MiB)")
    with FakeApiServer() as server:
        server.kube.create(NODES, {"metadata": {"name": NODE}})
        port = free_port()
        agent = Path(sys.executable).with_name("gpu-node-agent")
        argv = [
            str(agent),
            "--node-name",
            NODE,
            "--host-root",
            str(host.root),
            "--kubeconfig",
            write_kubeconfig(workdir, server.url),
            "--health-address",
            f"127.0.0.1:{port}",
        ]
        started = time.perf_counter()
        process = subprocess.Popen(argv, stderr=subprocess.DEVNULL, env={**os.environ, "LOG_LEVEL": "error"})
        try:
            ready = wait_ready(port, timeout=30)
            startup = time.perf_counter() - started
            time.sleep(1.0)  # let the watch and the udev monitor settle
            memory = memory_kib(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        if not ready:
            print("  the agent never became ready")
            return
        print(f"  {'start to first successful pass (readyz 200)':<52} {startup * 1000:7.0f} ms")
        print(f"  {'resident memory after start (VmRSS)':<52} {memory['VmRSS'] / 1024:7.1f} MiB")
        print(f"  {'peak resident memory (VmHWM)':<52} {memory['VmHWM'] / 1024:7.1f} MiB")
        objects = len(server.kube.list(PHYSICAL_GPUS).items)
        print(f"  {'PhysicalGPUs written':<52} {objects:7d}")


def wait_ready(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
        workdir = Path(tmp)
        host = build_host(workdir / "host")
        bench_scan(host)
        bench_passes(host, workdir)
        bench_rss(host, workdir)


if __name__ == "__main__":
    main()
