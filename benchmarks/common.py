# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Shared pieces of the benchmarks: the HGX-like node, timing, and running a component process."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from deckhouse_gpu.simulator.host.host_builder import HostBuilder

GPUS = 8
OTHER_DEVICES = 200
NODE = "bench-node"
ADDRESSES = [f"0000:{0x18 + index * 0x10:02x}:00.0" for index in range(GPUS)]


def build_host(root: Path) -> HostBuilder:
    """8 H100 GPUs among 200 other PCI functions (bridges, NICs, NVMe, BMC VGA, GPU audio, NVSwitch)."""
    host = HostBuilder(root).standard_node()
    host.add_other_devices(OTHER_DEVICES)
    for index, address in enumerate(ADDRESSES):
        host.add_gpu("h100-80gb", address, iommu_group=index)
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


def line(name: str, value: float, unit: str, decimals: int = 1) -> None:
    print(f"  {name:<52} {value:7.{decimals}f} {unit}")


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (resident now), VmHWM (peak) and RssAnon (the private part: RSS less the shared
    libraries' pages, which every process of the node maps once) of a process."""
    fields = {}
    for entry in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = entry.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            fields[key] = int(value.split()[0]) / 1024
    return fields | shared_libraries(pid)


def report_memory(memory: dict[str, float]) -> None:
    """The lines of ``memory_mib``'s figures, under a process's heading."""
    line("  resident memory after start (VmRSS)", memory["VmRSS"], "MiB")
    line("  of it private, not shared libraries (RssAnon)", memory["RssAnon"], "MiB")
    libraries = ", ".join(
        f"{key.removeprefix('lib:')} {mib:.1f}" for key, mib in memory.items() if key.startswith("lib:")
    )
    print(f"      largest shared libraries (MiB): {libraries}")
    line("  peak resident memory (VmHWM)", memory["VmHWM"], "MiB")


def shared_libraries(pid: int, top: int = 4) -> dict[str, float]:
    """The shared libraries with the most resident pages, as ``lib:<file>`` -> MiB: what the
    private figure leaves out, and what no Python change can shrink."""
    resident: dict[str, float] = {}
    name = ""
    for entry in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = entry.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            name = head[5].rsplit("/", 1)[-1] if len(head) > 5 and head[5].startswith("/") else ""
        elif head and head[0] == "Rss:" and ".so" in name:
            resident[name] = resident.get(name, 0.0) + int(head[1]) / 1024
    ranked = sorted(resident.items(), key=lambda item: -item[1])[:top]
    return {f"lib:{library}": mib for library, mib in ranked}


def measure_process(
    python_argv: list[str],
    ready: Callable[[], bool],
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> tuple[float, dict[str, float]] | None:
    """Starts ``python <python_argv>``; seconds until ``ready()`` and memory a second later."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *python_argv],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LOG_LEVEL": "error", **(env or {})},
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        startup = time.perf_counter() - started
        time.sleep(1.0)  # let the watches and monitors settle
        return startup, memory_mib(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


# What each library's import adds to a process, in the order a component loads them: the standard
# library's TLS and HTTP stack comes with urllib3 (libcrypto, http.client, email, importlib.metadata),
# so the later figures are each library's own. kubernetes-validate is left out as in the image.
IMPORT_STEPS = (
    ("urllib3 with the standard TLS/HTTP stack", "urllib3"),
    ("prometheus_client", "prometheus_client"),
    ("kubernetes (its package initialiser, whatever is used)", "kubernetes"),
    ("grpcio (gpu-handler run only)", "grpc"),
)
IMPORT_PROBE = """
import sys
sys.modules["kubernetes_validate"] = None
def memory():
    fields = (line.partition(":") for line in open("/proc/self/status"))
    return {key: int(value.split()[0]) / 1024 for key, _, value in fields if key in ("VmRSS", "RssAnon")}
print(memory()["VmRSS"], memory()["RssAnon"])
for name in sys.argv[1:]:
    __import__(name)
    print(memory()["VmRSS"], memory()["RssAnon"])
"""


def report_import_costs() -> None:
    """Resident and private memory each library's import adds, measured in a fresh interpreter."""
    names = [module for _, module in IMPORT_STEPS]
    output = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, *names], capture_output=True, text=True, check=True
    ).stdout
    figures = [tuple(float(value) for value in row.split()) for row in output.splitlines()]
    print("what the imports add (a fresh interpreter, in this order)")
    print(f"  {'the interpreter alone':<60} {figures[0][0]:5.1f} MiB, private {figures[0][1]:5.1f} MiB")
    for (label, _), before, after in zip(IMPORT_STEPS, figures, figures[1:], strict=False):
        print(f"  + {label:<58} {after[0] - before[0]:5.1f} MiB, private {after[1] - before[1]:5.1f} MiB")


ROOT = Path(__file__).resolve().parents[1]
