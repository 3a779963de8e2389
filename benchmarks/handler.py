# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler: one full NVML snapshot of an 8-GPU node (simulated NVML) and the process's memory."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import ADDRESSES, GPUS, NODE, line, measure_process, report, timed
from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.adapters.sim.host_builder import HostBuilder
from deckhouse_gpu.adapters.sim.sim_nvml import from_model_list
from deckhouse_gpu.adapters.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory.hardware_health import HealthSettings
from deckhouse_gpu.domain.inventory.nvidia_status import nvidia_view
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, KubeAPI
from deckhouse_gpu.services.capabilities import CapabilitiesPass
from deckhouse_gpu.services.events import EventRecorder
from deckhouse_gpu.services.inventory_sync import InventorySync
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig

MODELS = ",".join(["h100-80gb"] * GPUS)
READY = {
    "type": "DriverReady",
    "status": "True",
    "reason": "Bench",
    "message": "",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


def inventory(api: KubeAPI, host: HostBuilder) -> None:
    """The agent's objects, with DriverReady as gpu-controller would set it."""
    api.create(NODES, {"metadata": {"name": NODE}})
    InventorySync(api, SysfsHost(host.root), NODE, EventRecorder(api, "bench", NODE, SystemClock())).sync()
    for card in api.list(PHYSICAL_GPUS).items:
        api.patch(
            PHYSICAL_GPUS, card["metadata"]["name"], {"status": {"conditions": [READY]}}, subresource="status"
        )


def bench_snapshot(host: HostBuilder) -> None:
    print(f"gpu-handler snapshot ({GPUS} H100 with every MIG profile and placement; simulated NVML)")
    nvml = from_model_list(MODELS, ADDRESSES, node_name=NODE)
    driver = nvml.driver()
    report(
        "NVML reads + status view, all cards",
        timed(lambda: [nvidia_view(nvml.snapshot(a), driver) for a in ADDRESSES], 200),
    )
    api = MemoryKube()
    inventory(api, host)
    clock = SystemClock()
    capabilities = CapabilitiesPass(
        api, nvml, NODE, EventRecorder(api, "bench", NODE, clock), clock, HealthSettings()
    )
    report(f"full pass, in-memory API: first, writes {GPUS}", timed(capabilities.run, 1))
    report("full pass, in-memory API: nothing to change", timed(capabilities.run, 50))


def bench_process(host: HostBuilder, workdir: Path) -> None:
    print("gpu-handler process (run --nvml-sim, real client, local fake API server)")
    with FakeApiServer() as server:
        inventory(server.kube, host)
        kubeconfig = write_kubeconfig(workdir, server.url)
        argv = ["run", "--node-name", NODE, "--kubeconfig", kubeconfig, "--nvml-sim", MODELS,
                "--host-root", str(host.root), "--health-address", "127.0.0.1:0"]  # fmt: skip

        def filled() -> bool:
            return all(
                "capabilities" in (c.get("status") or {}) for c in server.kube.list(PHYSICAL_GPUS).items
            )

        measured = measure_process(["-m", "deckhouse_gpu.cmd.handler", *argv], filled)
        if measured is None:
            print("  the handler never filled the capabilities")
            return
        startup, memory = measured
        line("start to all cards filled", startup * 1000, "ms", 0)
        line("resident memory after start (VmRSS)", memory["VmRSS"], "MiB")
        line("peak resident memory (VmHWM)", memory["VmHWM"], "MiB")


def run(host: HostBuilder, workdir: Path) -> None:
    bench_snapshot(host)
    bench_process(host, workdir)
