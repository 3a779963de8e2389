"""The simulated cluster behind ``make demo``: the real components, in one process.

Every node gets a host root on disk built like real sysfs and a gpu-node-agent running its
real loop in a thread against one in-memory API server. Scenario steps change the hardware and
send the uevents the kernel would send; the agents react exactly as they would on a node.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.adapters.sim.host_builder import HostBuilder
from deckhouse_gpu.adapters.sim.scenario import Scenario, ScenarioError, SimNode, Step
from deckhouse_gpu.adapters.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory import node_selector
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS
from deckhouse_gpu.services.deletion_watch import start_deletion_watch
from deckhouse_gpu.services.events import EventRecorder
from deckhouse_gpu.services.health import HealthState
from deckhouse_gpu.services.inventory_sync import InventorySync
from deckhouse_gpu.services.node_agent import LoopSettings, NodeAgentLoop

SETTLE_TIMEOUT = 10.0
QUIET_SECONDS = 0.2


@dataclass
class SimulatedNode:
    spec: SimNode
    builder: HostBuilder
    loop: NodeAgentLoop
    health: HealthState
    stop: threading.Event


class SimulatedCluster:
    def __init__(self, scenario: Scenario, workdir: Path | None = None) -> None:
        self.scenario = scenario
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-sim-") if workdir is None else None
        self.workdir = workdir or Path(self._tmp.name if self._tmp else ".")
        self.api = MemoryKube()
        self.clock = SystemClock()
        self.nodes: dict[str, SimulatedNode] = {}

    def start(self) -> None:
        """Builds every host first, then starts the agents together, as a booting cluster would."""
        hosts = {spec.name: self._build_host(spec) for spec in self.scenario.nodes}
        for spec in self.scenario.nodes:
            self.nodes[spec.name] = self._start_agent(spec, hosts[spec.name])
        self.settle()

    def _build_host(self, spec: SimNode) -> HostBuilder:
        self.api.create(
            NODES, {"metadata": {"name": spec.name, "labels": {"kubernetes.io/hostname": spec.name}}}
        )
        builder = HostBuilder(self.workdir / spec.name)
        builder.standard_node(bare_metal=spec.machine == "bare-metal")
        if spec.machine == "no-dmi":
            builder.set_dmi(None, None)
        builder.add_other_devices(spec.other_devices)
        for gpu in spec.gpus:
            builder.add_gpu(gpu.model, gpu.address, gpu.driver)
        return builder

    def _start_agent(self, spec: SimNode, builder: HostBuilder) -> SimulatedNode:
        events = EventRecorder(self.api, "gpu-node-agent", spec.name, self.clock)
        sync = InventorySync(self.api, SysfsHost(builder.root), spec.name, events)
        health = HealthState()
        loop = NodeAgentLoop(sync, health, self.clock, LoopSettings())
        stop = threading.Event()
        threading.Thread(target=loop.run, args=(stop,), name=f"agent-{spec.name}", daemon=True).start()
        start_deletion_watch(
            self.api,
            PHYSICAL_GPUS,
            node_selector(spec.name),
            loop.notify_deleted,
            stop,
        )
        return SimulatedNode(spec, builder, loop, health, stop)

    def apply(self, step: Step) -> None:
        """Changes the world as the step says, with the uevents the kernel would send."""
        args = step.args
        if step.kind == "deleteObject":
            self.api.delete(PHYSICAL_GPUS, str(args["name"]))
            return
        node = self._node(str(args.get("node")))
        address = str(args.get("address", ""))
        if step.kind == "addGpu":
            node.builder.add_gpu(str(args["model"]), address, args.get("driver", "nvidia"))
            node.loop.notify_udev("add", address)
        elif step.kind == "removeGpu":
            node.builder.remove_device(address)
            node.loop.notify_udev("remove", address)
        elif step.kind == "bindDriver":
            node.loop.notify_udev("unbind", address)
            node.builder.bind_driver(address, args.get("driver"))
            node.loop.notify_udev("bind", address)
        elif step.kind == "deleteNode":
            # The machine is decommissioned: its agent stops, the garbage collector does the rest.
            node.stop.set()
            del self.nodes[node.spec.name]
            self.api.delete(NODES, node.spec.name)

    def _node(self, name: str) -> SimulatedNode:
        if name not in self.nodes:
            raise ScenarioError(f"step names unknown node {name!r}")
        return self.nodes[name]

    def settle(self) -> float:
        """Waits until every agent is idle for a quiet moment; returns the seconds it took.

        The quiet moment lets watch events that are still in flight reach their agent.
        """
        started = time.monotonic()
        quiet_since: float | None = None
        while (now := time.monotonic()) - started < SETTLE_TIMEOUT:
            busy = any(not n.health.snapshot().synced or not n.loop.idle() for n in self.nodes.values())
            if busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= QUIET_SECONDS:
                return quiet_since - started
            time.sleep(0.005)
        raise TimeoutError(f"the agents did not settle within {SETTLE_TIMEOUT} s")

    def physical_gpus(self) -> list[dict[str, Any]]:
        return self.api.list(PHYSICAL_GPUS).items

    def events(self) -> list[dict[str, Any]]:
        return self.api.list(EVENTS, namespace="default").items

    def close(self) -> None:
        for node in self.nodes.values():
            node.stop.set()
        if self._tmp is not None:
            self._tmp.cleanup()
