# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's and gpu-node-agent's metrics for the monitoring world (tests/support/monitoring_world.py).

Per node of that world, the components' own services run once on a simulated node of the same
cards, measured as ``gpu-handler run`` and ``gpu-node-agent`` measure them (the metered API, NVML,
MIG control and checkpoint, the observers of prepare, publish and pass), and their registries are
served by the components' own metrics server on ``/metrics`` (the one a pod's kube-rbac-proxy
fronts), labelled as the PodMonitors label them. gpu-handler runs only where the driver is ready
(not on node t4). What happens, by node:

- every node: gpu-node-agent's inventory pass over its cards after a udev ``add`` event; on h100
  the API server refuses its first write (Unavailable) and the pass is repeated;
- h100: gpu-handler's passes (capabilities, publish) with the third card's NVML failing and the
  first status write refused (Conflict); ml/small (two MIG instances, Pod train) and ml/big (a
  whole card, Pod big) prepared; a claim of the whole MIG card refused (a conflict); a whole card
  prepared and unprepared again; a MIG instance that cannot be destroyed (its unprepare fails and
  is retried);
- a100: gpu-handler's pass, two shares of the card prepared: ml/notebook (25 %, Pod notebook) and
  lab/lab (50 %, Pod lab);
- a30: gpu-handler's pass only.

The claims are the monitoring world's (tests/support/monitoring_world.py), reserved for the same
Pods; what the cards then hold (their UUIDs, the MIG instances and their IDs) is handed to the
dcgm-exporter stand-ins, so DCGM's series and gpu-handler's prepared-device info describe the same
hardware.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prometheus_client

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.metrics.api_write_metrics import MeteredKube
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredCheckpointStore, MeteredMig, MeteredNVML
from deckhouse_gpu.adapters.metrics.node_agent_metrics import NodeAgentMetrics
from deckhouse_gpu.adapters.process.metrics_server import serve_metrics
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.domain.naming import mig_name, physical_name
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_CLAIMS, Conflict, Unavailable
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_mig import MigOp
from testkit.prepare_world import NODE, PrepareWorld, allocate, allocate_share, build_world
from tests.support.prometheus_server import Target

# The monitoring world's nodes: model and number of cards, at the addresses GpuCluster gives them.
NODES_CARDS = {"h100": ("h100-80gb", 3), "a100": ("a100-40gb", 1), "a30": ("a30", 1), "t4": ("t4", 1)}
HANDLER_NODES = ("h100", "a100", "a30")  # where the driver is ready
CLASSES = {"h100": "gpu-h100-80gb", "a100": "gpu-a100-40gb-shared"}


@dataclass
class Hardware:
    """What a node's cards hold after gpu-handler's work, as DCGM would report it."""

    uuids: dict[str, str] = field(default_factory=dict)  # PCI address -> card UUID
    mig_instances: dict[str, int] = field(default_factory=dict)  # MIG device name -> GPU instance ID


def addresses(count: int) -> list[str]:
    return [f"0000:{0x10 + i * 0x08:02x}:00.0" for i in range(count)]


def agent_pass(node: str, root: Path) -> NodeAgentMetrics:
    model, count = NODES_CARDS[node]
    host = HostBuilder(root).standard_node()
    for address in addresses(count):
        host.add_gpu(model, address)
    kube = MemoryKube()
    kube.create(NODES, {"metadata": {"name": node}})
    metrics = NodeAgentMetrics()
    api, clock = MeteredKube(kube, metrics), SystemClock()
    sync = InventorySync(api, SysfsHost(host.root), node, EventRecorder(api, "gpu-node-agent", node, clock))
    loop = NodeAgentLoop(sync, HealthState(), clock, LoopSettings(), observer=metrics)
    loop.notify_udev("add", addresses(count)[0])
    if node == "h100":
        kube.fail_next("create", Unavailable("etcd timeout"))
        loop._pass([])
    loop._pass([])
    return metrics


def _handler_pass(world: PrepareWorld, metrics: HandlerMetrics, node: str) -> None:
    api, clock = MeteredKube(world.api, metrics), SystemClock()
    events = EventRecorder(api, "gpu-handler", NODE, clock)
    nvml = MeteredNVML(world.nvml, metrics)
    capabilities = CapabilitiesPass(api, nvml, NODE, events, clock, HealthSettings(0, (5,)))
    publisher = SlicePublisher(api, NODE, events, PublisherSettings())
    loop = HandlerLoop(capabilities, HealthState(), clock, HandlerSettings(), publisher, observer=metrics)
    if node == "h100":
        world.api.fail_next("patch", Conflict("the object has been modified"))
        loop._pass([])
    loop._pass([])


def _reserve(world: PrepareWorld, obj: dict[str, Any], pod: str, device_class: str) -> ClaimRef:
    """The claim's request names its DeviceClass and the claim is reserved for ``pod``, as the
    scheduler leaves a claim it allocated for a Pod."""
    meta = obj["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    exactly = {
        **(((obj.get("spec") or {}).get("devices") or {}).get("requests") or [{}])[0].get("exactly", {})
    }
    exactly["deviceClassName"] = device_class
    world.api.patch(
        RESOURCE_CLAIMS, name, {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
        namespace=namespace,
    )  # fmt: skip
    reserved = {"reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}]}
    world.api.patch(RESOURCE_CLAIMS, name, {"status": reserved}, subresource="status", namespace=namespace)
    return ClaimRef(namespace, meta["uid"], name)


def _prepare(world: PrepareWorld, metrics: HandlerMetrics, node: str) -> PrepareService:
    service = world.service(observer=PrepareObserver(metrics))
    service.store = MeteredCheckpointStore(service.store, metrics)
    service.mig = MeteredMig(service.mig, metrics)
    metrics.watch_checkpoint_file(world.checkpoint_path)
    cards = addresses(NODES_CARDS[node][1])

    def claim(obj: dict[str, Any]) -> ClaimRef:
        meta = obj["metadata"]
        return ClaimRef(meta["namespace"], meta["uid"], meta["name"])

    if node == "h100":
        instances = (mig_name(cards[0], "1g.10gb", 0), mig_name(cards[0], "1g.10gb", 1))
        mig_class = f"{CLASSES[node]}-mig-1g.10gb"
        small = _reserve(world, allocate(world.api, "small", *instances, namespace="ml"), "train", mig_class)
        big = _reserve(
            world, allocate(world.api, "big", physical_name(cards[1]), namespace="ml"), "big", CLASSES[node]
        )
        clash = claim(allocate(world.api, "clash", physical_name(cards[0])))
        service.prepare([small, big, clash])  # the last conflicts with the MIG instances
        done = claim(allocate(world.api, "done", physical_name(cards[2])))
        service.prepare([done])
        service.unprepare([done])
        stuck = claim(allocate(world.api, "stuck", mig_name(cards[2], "1g.10gb", 0)))
        service.prepare([stuck])
        world.mig.inner.fail_next(cards[2], MigOp.DESTROY, "In use by another client")
        service.unprepare([stuck])
    elif node == "a100":
        shares = (("notebook", "ml", "25"), ("lab", "lab", "50"))
        service.prepare(
            [
                _reserve(
                    world,
                    allocate_share(world.api, name, physical_name(cards[0]), percent, None, namespace),
                    name,
                    CLASSES[node],
                )
                for name, namespace, percent in shares
            ]
        )
    return service


def hardware(world: PrepareWorld, service: PrepareService) -> Hardware:
    found = Hardware()
    for card in world.api.list(PHYSICAL_GPUS).items:
        status = card.get("status") or {}
        uuid = ((status.get("currentState") or {}).get("nvidia") or {}).get("gpuUUID")
        if uuid:
            found.uuids[status["pciInfo"]["address"]] = str(uuid)
    for entry in service.store.load().checkpoint.claims.values():
        for plan in entry.devices:
            for record in entry.mig:
                if plan.kind == "MIG" and (record.card, record.placement_start) == (
                    plan.card,
                    plan.placement_start,
                ):
                    found.mig_instances[plan.device] = record.gpu_instance_id
    return found


def handler_pass(node: str, root: Path) -> tuple[HandlerMetrics, Hardware]:
    model, count = NODES_CARDS[node]
    world = build_world(root, dict.fromkeys(addresses(count), model))
    metrics = HandlerMetrics()
    if node == "h100":
        world.nvml.fail_device(addresses(count)[2], "GPU is lost")  # the card the world finds unhealthy
    _handler_pass(world, metrics, node)
    world.nvml.clear_failures()
    service = _prepare(world, metrics, node)
    return metrics, hardware(world, service)


@contextlib.contextmanager
def serving(workdir: Path, namespace: str) -> Iterator[tuple[list[Target], dict[str, Hardware]]]:
    """Every node's gpu-node-agent and every driver-ready node's gpu-handler, as scrape targets, and
    what each driver-ready node's cards hold."""
    # As the components do: no creation-time series beside every counter and histogram.
    prometheus_client.disable_created_metrics()
    with contextlib.ExitStack() as stack:
        stack.callback(prometheus_client.enable_created_metrics)
        targets, held = [], {}
        for node in NODES_CARDS:
            sources = [("gpu-node-agent", agent_pass(node, workdir / "agents" / node).registry)]
            if node in HANDLER_NODES:
                metrics, held[node] = handler_pass(node, workdir / "handlers" / node)
                sources.append(("gpu-handler", metrics.registry))
            for job, registry in sources:
                server = serve_metrics(("127.0.0.1", 0), registry)
                stack.callback(server.shutdown)
                labels = {"namespace": namespace, "pod": f"{job}-{node}", "node": node}
                targets.append(Target(job, f"127.0.0.1:{server.server_address[1]}", labels))
        yield targets, held
