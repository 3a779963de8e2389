# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler: one full NVML snapshot of an 8-GPU node (simulated NVML) and the process's memory."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.common import (
    ADDRESSES,
    GPUS,
    NODE,
    line,
    measure_process,
    report,
    report_import_costs,
    report_memory,
    timed,
)
from benchmarks.in_cluster import launcher_argv, pod_api_server
from benchmarks.kubelet_socket import KubeletStandIn
from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.domain.inventory.nvidia_status import nvidia_view
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_SLICES, KubeAPI
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_nvml import from_model_list
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
    print("gpu-handler process (run --nvml-sim, real client, local fake API server; target RSS ≤ 60 MiB)")
    with pod_api_server(workdir) as pod:
        if pod is not None:
            server, ca, env = pod
            inventory(server.kube, host)
            launcher = launcher_argv("handler", workdir, ca, ["run", *handler_argv(host)])
            measure_handler("in a pod (in-cluster config, https)", server, launcher, env, host)
    with FakeApiServer() as server:
        inventory(server.kube, host)
        argv = ["-m", "deckhouse_gpu.simulator.gpu_handler", "run", *handler_argv(host)]
        argv += ["--kubeconfig", write_kubeconfig(workdir, server.url)]
        measure_handler("with --kubeconfig (loads the kubeconfig/OIDC code too)", server, argv, None, host)


def handler_argv(host: HostBuilder) -> list[str]:
    return ["--node-name", NODE, "--nvml-sim", MODELS, "--host-root", str(host.root),
            "--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"]  # fmt: skip


def measure_handler(
    label: str, server: FakeApiServer, argv: list[str], env: dict[str, str] | None, host: HostBuilder
) -> None:
    started = time.perf_counter()
    first_publish: list[float] = []
    filled_at: list[float] = []
    kubelet = KubeletStandIn(host.root / "var/lib/kubelet/plugins_registry")

    def ready() -> bool:
        if not first_publish and server.kube.list(RESOURCE_SLICES).items:
            first_publish.append(time.perf_counter() - started)
        cards = server.kube.list(PHYSICAL_GPUS).items
        if not first_publish or not all("capabilities" in (c.get("status") or {}) for c in cards):
            return False
        if not filled_at:
            filled_at.append(time.perf_counter() - started)
        return kubelet.attached()  # memory as on a node: registered, the health stream open

    try:
        measured = measure_process(argv, ready, env=env)
    finally:
        kubelet.close()
    print(f"  {label}")
    if measured is None:
        print("    the handler never filled the capabilities, published and registered")
        return
    _, memory = measured
    line("  start to first ResourceSlice published", first_publish[0] * 1000, "ms", 0)
    line("  start to all cards filled and published", filled_at[0] * 1000, "ms", 0)
    print(f"    registered with a kubelet stand-in, its health stream open ({kubelet.devices} devices)")
    report_memory(memory)


def run(host: HostBuilder, workdir: Path) -> None:
    bench_snapshot(host)
    bench_process(host, workdir)
    report_import_costs()
