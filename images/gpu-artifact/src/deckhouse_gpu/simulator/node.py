# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One simulated node: its host root, its NVML, and the real node components running on them.

gpu-node-agent reads the host tree; gpu-handler reads the simulated NVML, which shows exactly the
cards bound to the nvidia driver, as real NVML does. The driver validator is a Pod object whose
readiness the scenario sets, as the real validator's probe would.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.controller_resources import PODS
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, KubeAPI, NotFound
from deckhouse_gpu.services.inventory.deletion_watch import start_deletion_watch
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.inventory.node_agent import LoopSettings, NodeAgentLoop
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.other_owner import OwnerBoard
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.object_watch import start_watch
from deckhouse_gpu.services.runtime.trigger_loop import TriggerLoop
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from deckhouse_gpu.simulator.prepare import prepare_service
from deckhouse_gpu.simulator.scenario import SimNode, SimSettings, numa_node_of
from deckhouse_gpu.simulator.sharing import card_appeared, sharing_host
from deckhouse_gpu.simulator.vfio import build_iommu, vfio_side

VALIDATOR_NAMESPACE = "d8-gpu"
VALIDATOR_LABELS = {"app": "nvidia-driver-validator"}
FIRST_LIST_SECONDS = 10.0  # how long the loops wait for the watches' first lists at start


@dataclass
class SimulatedNode:
    spec: SimNode
    builder: HostBuilder
    nvml: SimulatedNVML
    models: dict[str, str]  # PCI address -> model, for cards NVML may see again after a rebind
    settings: SimCardSettings  # the cards' compute mode and time-slice, as NVML holds them
    loops: list[TriggerLoop] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    prepare: PrepareService | None = None
    device_health: DeviceHealthBoard | None = None  # what the kubelet's health stream would be sent
    metrics: HandlerMetrics = field(default_factory=HandlerMetrics)  # gpu-handler's prepare metrics
    xid_watcher: XidWatcher | None = None  # gpu-handler's Xid watcher, on the simulated NVML's events

    def idle(self) -> bool:
        watcher = self.xid_watcher
        xids_settled = watcher is None or (watcher.idle() and not self.nvml.xids.pending())
        return xids_settled and all(loop.idle() for loop in self.loops)

    def agent(self) -> NodeAgentLoop:
        loop = self.loops[0]
        assert isinstance(loop, NodeAgentLoop)
        return loop

    def add_gpu(self, model: str, address: str, driver: str | None, numa_node: int | None = None) -> None:
        self.builder.add_gpu(
            model, address, driver, numa_node=numa_node_of(self.spec.machine, address, numa_node)
        )
        self.models[address] = model
        if driver == "nvidia":
            self.nvml.add_card(address, model)
            card_appeared(self.settings, address)
        self.agent().notify_udev("add", address)

    def remove_gpu(self, address: str) -> None:
        self.builder.remove_device(address)
        self.nvml.remove_card(address)
        self.agent().notify_udev("remove", address)

    def bind_driver(self, address: str, driver: str | None) -> None:
        self.agent().notify_udev("unbind", address)
        self.builder.bind_driver(address, driver)
        if address in self.nvml.device_addresses():
            self.nvml.remove_card(address)
        if driver == "nvidia":
            self.nvml.add_card(address, self.models[address])
            card_appeared(self.settings, address)
        self.agent().notify_udev("bind", address)

    def kernel_event(self, action: str, address: str) -> None:
        """A uevent of the simulated kernel (a driver moved by VFIO prepare): the agent sees it, and
        a card back on nvidia starts at the driver's defaults."""
        if action == "bind" and address in self.nvml.device_addresses():
            card_appeared(self.settings, address)
        self.agent().notify_udev(action, address)


def build_node(spec: SimNode, builder: HostBuilder) -> SimulatedNode:
    builder.standard_node(bare_metal=spec.machine == "bare-metal").install_nvidia_driver()
    if spec.machine == "no-dmi":
        builder.set_dmi(None, None)
    builder.add_other_devices(spec.other_devices)
    if spec.iommu:
        build_iommu(spec, builder)  # every card in an IOMMU group of its own, vfio-pci loaded
    for gpu in spec.gpus if not spec.iommu else ():
        builder.add_gpu(
            gpu.model,
            gpu.address,
            gpu.driver,
            numa_node=numa_node_of(spec.machine, gpu.address, gpu.numa_node),
        )
    nvidia_bound = {gpu.address: gpu.model for gpu in spec.gpus if gpu.driver == "nvidia"}
    return SimulatedNode(
        spec,
        builder,
        SimulatedNVML(nvidia_bound, node_name=spec.name),
        {g.address: g.model for g in spec.gpus},
        SimCardSettings(nvidia_bound),
    )


def start_components(
    node: SimulatedNode, api: KubeAPI, clock: Clock, settings: SimSettings, handler_api: KubeAPI | None = None
) -> None:
    """gpu-node-agent talks to ``api``, gpu-handler to ``handler_api`` (the same one by default)."""
    name = node.spec.name
    hapi = handler_api or api
    agent = NodeAgentLoop(
        InventorySync(
            api, SysfsHost(node.builder.root), name, EventRecorder(api, "gpu-node-agent", name, clock)
        ),
        HealthState(),
        clock,
        LoopSettings(),
    )
    health = HealthSettings(settings.health_grace_seconds, (max(settings.heartbeat_seconds / 2, 0.1),))
    handler_events = EventRecorder(hapi, "gpu-handler", name, clock)
    # Short waits: the simulator's settle waits for the watcher to follow each change of cards.
    node.xid_watcher = XidWatcher(node.nvml, wait_seconds=0.05, retry_seconds=settings.heartbeat_seconds)
    capabilities = CapabilitiesPass(
        hapi, node.nvml, name, handler_events, clock, health, node.xid_watcher.board
    )
    publisher = SlicePublisher(
        hapi, name, handler_events, PublisherSettings(mig_profiles=settings.mig_profiles)
    )
    node.device_health = DeviceHealthBoard(name)
    handler = HandlerLoop(
        capabilities,
        HealthState(),
        clock,
        HandlerSettings(settings.heartbeat_seconds, health),
        publisher,
        device_health=node.device_health,
        xid_watcher=node.xid_watcher,
    )
    node.prepare = prepare_service(
        hapi, name, node.builder.root, node.nvml, clock,
        offers=handler, sharing=sharing_host(hapi, name, node.builder.root, node.settings),
        vfio=vfio_side(hapi, name, node.builder.root, node.nvml, clock, node.kernel_event),
        metrics=node.metrics,
    )  # fmt: skip
    # Another owner of the node's cards (DESIGN.md D16), from the Node: a scenario's labelNode with
    # node-manager's or the GPU operator's label holds them. Processes are not looked at here, since
    # setBusy stands for processes of the VM scenarios' own claims.
    handler.owners = OwnerBoard(
        hapi, name, handler_events, clock, written=capabilities.written_versions.append
    )
    prepare = node.prepare
    prepare.holds = handler.owners.held
    handler.prepared_claims = lambda: list(prepare.claim_names)
    prepare.start()
    node.loops = [agent, handler]
    # gpu-handler's watches list before its first pass: a change between that pass's read and a
    # later first list would be reported by no event, and the handler would hear of it only at its
    # next heartbeat, after the simulator's settle had already taken the node for quiet.
    listed = [threading.Event(), threading.Event()]
    start_watch(hapi, PHYSICAL_GPUS, node_selector(name), handler.on_change, node.stop, listed=listed[0])
    start_watch(
        hapi, NODES, None, handler.on_node_change, node.stop,
        field_selector=f"metadata.name={name}", listed=listed[1],
    )  # fmt: skip
    start_deletion_watch(api, PHYSICAL_GPUS, node_selector(name), agent.notify_deleted, node.stop)
    deadline = time.monotonic() + FIRST_LIST_SECONDS
    for event in listed:  # a list that keeps failing is retried by the watch; the loops start anyway
        event.wait(max(deadline - time.monotonic(), 0.0))
    node.xid_watcher.start(node.stop)
    for loop in node.loops:
        threading.Thread(
            target=loop.run, args=(node.stop,), name=f"{type(loop).__name__}-{name}", daemon=True
        ).start()


def set_validator(api: KubeAPI, node: str, state: str) -> None:
    """The validator Pod as the kubelet would report it: Ready, not ready (crash-looping), or gone."""
    pod_name = f"nvidia-driver-validator-{node}"
    if state == "missing":
        with contextlib.suppress(NotFound):
            api.delete(PODS, pod_name, namespace=VALIDATOR_NAMESPACE)
        return
    try:
        api.get(PODS, pod_name, namespace=VALIDATOR_NAMESPACE)
    except NotFound:
        metadata = {"name": pod_name, "namespace": VALIDATOR_NAMESPACE, "labels": dict(VALIDATOR_LABELS)}
        api.create(PODS, {"metadata": metadata, "spec": {"nodeName": node}})
    api.patch(
        PODS,
        pod_name,
        {"status": _pod_status(state == "ready")},
        subresource="status",
        namespace=VALIDATOR_NAMESPACE,
    )


def _pod_status(ready: bool) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    container: dict[str, Any] = {"name": "validator", "ready": ready, "restartCount": 0 if ready else 4}
    if not ready:
        condition["reason"] = "ContainersNotReady"
        container["state"] = {
            "waiting": {"reason": "CrashLoopBackOff", "message": "nvidia-smi failed: driver not loaded"}
        }
    return {"phase": "Running", "conditions": [condition], "containerStatuses": [container]}
