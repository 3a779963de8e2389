# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The whole stack behind a faulty API server: a chaos run and what it ends with.

Three simulated nodes (whole cards and MIG) run the real gpu-node-agent and gpu-handler loops;
gpu-controller and gpu-dra-controller run beside them; every component has its own real HTTP
client (``load_kube``, a token of its own) to the fake API server, with ``testkit.chaos`` in front.
The user and the kubelet act on the store directly (Nodes, validator Pods, Pods with spec.nodeName
and their claims) and through the node's PrepareService (NodePrepareResources, retried as the
kubelet does), so faults hit the components only. A run goes through phases — inventory and
slices, allocation by gpu-dra-controller, prepare — each waiting for the state the fault-free run
reached; ``snapshot`` is that state with what legitimately differs between runs taken out.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.cmd.gpu_controller import ControllerOptions, start_controller
from deckhouse_gpu.cmd.gpu_dra_controller.run import start_dra_controller
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, LEASES, RESOURCE_CLAIM_TEMPLATES
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Object,
    Resource,
)
from deckhouse_gpu.services.allocation.dra_controller import DraControllerSettings
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.node import SimulatedNode, build_node, set_validator, start_components
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE, claim_ref
from deckhouse_gpu.simulator.scenario import parse_scenario
from testkit.chaos import Chaos, component_of
from testkit.chaos_state import difference, snapshot
from testkit.fake_apiserver import FakeApiServer
from testkit.kubeconfig import write_kubeconfig

WORLD = """
settings: {healthGraceSeconds: 2, heartbeatSeconds: 1}
nodes:
  - name: gpu-a30
    gpus: [{model: a30, address: "0000:17:00.0"}, {model: a30, address: "0000:31:00.0"}]
  - name: gpu-h100
    gpus: [{model: h100-80gb, address: "0000:18:00.0"}, {model: h100-80gb, address: "0000:2a:00.0"}]
  - name: gpu-l40s
    gpus: [{model: l40s, address: "0000:ca:00.0"}]
steps: []
"""
_SELECTOR = 'device.driver == "gpu.deckhouse.io" && device.attributes["gpu.deckhouse.io"]'
# (node, claim, device class, count, CEL selector): Pods created straight on their node.
CLAIMS = (
    (
        "gpu-h100",
        "inference",
        "mig-1g",
        2,
        f'{_SELECTOR}.deviceType == "MIG" && {_SELECTOR}.migProfile == "1g.10gb"',
    ),
    ("gpu-a30", "training", "whole-a30", 1, f'{_SELECTOR}.deviceType == "Physical"'),
)
RESOURCES: tuple[Resource, ...] = (
    NODES, EVENTS, PODS, PHYSICAL_GPUS, RESOURCE_SLICES, RESOURCE_CLAIMS, DEVICE_CLASSES,
    RESOURCE_CLAIM_TEMPLATES, LEASES,
)  # fmt: skip
PHASE_TIMEOUT = 90.0
PREPARE_ATTEMPTS = 200


# Keys whose values differ between equal runs; timestamps anywhere else are masked too.
class CountingKube(MemoryKube):
    """Counts the creates the store accepted, per object: a duplicated write shows as a 2."""

    def __init__(self) -> None:
        super().__init__()
        self.creates: Counter[str] = Counter()

    def create(self, resource: Resource, obj: Object) -> Object:
        made = super().create(resource, obj)
        meta = made["metadata"]
        self.creates[f"{resource.plural}/{meta.get('namespace') or ''}/{meta['name']}"] += 1
        return made


@dataclass
class ChaosRun:
    rate: float
    seed: int
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)  # phase -> snapshot
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> time to converge
    requests: Counter[str] = field(default_factory=Counter)  # component -> requests sent
    faults: dict[str, int] = field(default_factory=dict)  # kind -> injected
    faults_by_component: Counter[str] = field(default_factory=Counter)
    creates: Counter[str] = field(default_factory=Counter)
    prepare_attempts: int = 0
    crashes: list[str] = field(default_factory=list)  # uncaught exceptions in any thread
    dead: list[str] = field(default_factory=list)  # component threads no longer alive


class ChaosWorld:
    def __init__(self, workdir: Path, seed: int, rate: float) -> None:
        self.workdir, self.seed, self.rate = workdir, seed, rate
        self.store = CountingKube()
        self.store.version = (1, 35)
        self.chaos = Chaos(seed, rate)
        self.server = FakeApiServer(self.store, RESOURCES)
        self.server.interceptor = self.chaos
        self.scenario = parse_scenario("chaos", WORLD)
        self.stop = threading.Event()
        self.nodes: dict[str, SimulatedNode] = {}
        self.clients: list[ClientKube] = []

    def client(self, component: str) -> ClientKube:
        directory = self.workdir / "kubeconfigs" / component
        directory.mkdir(parents=True, exist_ok=True)
        client = load_kube(write_kubeconfig(directory, self.server.url, token=component), read_timeout=10.0)
        self.clients.append(client)
        return client

    def start(self) -> None:
        self.server.start()
        for spec in self.scenario.nodes:
            labels = {"kubernetes.io/hostname": spec.name}
            self.store.create(NODES, {"metadata": {"name": spec.name, "labels": labels}})
            self.nodes[spec.name] = build_node(spec, HostBuilder(self.workdir / spec.name))
            set_validator(self.store, spec.name, "ready")
        controller = ControllerOptions(ControllerSettings(debounce_seconds=0.05), leader_elect=False)
        start_controller(self.client("gpu-controller"), self.stop, controller)
        start_dra_controller(
            self.client("gpu-dra-controller"), self.stop, leader_elect=False, pinned_version="1.35",
            settings=DraControllerSettings(debounce_seconds=0.02, audit_debounce_seconds=0.1),
        )  # fmt: skip
        clock = SystemClock()
        for name, node in self.nodes.items():
            agent, handler = self.client(f"gpu-node-agent/{name}"), self.client(f"gpu-handler/{name}")
            start_components(node, agent, clock, self.scenario.settings, handler_api=handler)

    def pods_on_nodes(self) -> None:
        """What a user does: a DeviceClass per claim, the claim, a Pod with spec.nodeName for it."""
        for node, name, device_class, count, selector in CLAIMS:
            cel = {"cel": {"expression": selector}}
            self.store.create(
                DEVICE_CLASSES, {"metadata": {"name": device_class}, "spec": {"selectors": [cel]}}
            )
            request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
            meta = {"name": name, "namespace": CLAIM_NAMESPACE}
            self.store.create(
                RESOURCE_CLAIMS, {"metadata": meta, "spec": {"devices": {"requests": [request]}}}
            )
            claims = [{"name": "gpu", "resourceClaimName": name}]
            container = {"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}
            spec = {"nodeName": node, "containers": [container], "resourceClaims": claims}
            self.store.create(PODS, {"metadata": dict(meta), "spec": spec})

    def prepare_all(self) -> int:
        """The kubelet's NodePrepareResources for every claim, retried until it succeeds."""
        attempts = 0
        for node, name, *_ in CLAIMS:
            service = self.nodes[node].prepare
            assert service is not None
            ref = claim_ref(self.store, name)
            for _ in range(PREPARE_ATTEMPTS):
                attempts += 1
                if not service.prepare([ref])[ref.uid].error:
                    break
                time.sleep(0.05)
            else:
                raise TimeoutError(f"claim {name} not prepared after {PREPARE_ATTEMPTS} attempts")
        return attempts

    def close(self) -> None:
        self.stop.set()
        for node in self.nodes.values():
            node.stop.set()
        self.server.stop()
        for client in self.clients:
            client.close()


def converge(
    store: MemoryKube, wanted: dict[str, Any] | None, quiet: float, timeout: float = PHASE_TIMEOUT
) -> tuple[dict[str, Any], float]:
    """Waits for the store to equal ``wanted`` (or, without it, to stay unchanged for ``quiet`` s);
    returns the snapshot and the seconds until it first held."""
    started, last, since = time.monotonic(), None, time.monotonic()
    while time.monotonic() - started < timeout:
        current = snapshot(store)
        if wanted is not None and current == wanted:
            return current, time.monotonic() - started
        if current != last:
            last, since = current, time.monotonic()
        elif wanted is None and time.monotonic() - since >= quiet:
            return current, since - started
        time.sleep(0.02)
    raise TimeoutError(f"no convergence within {timeout} s: {difference(last, wanted)}")


def claims_allocated(state: dict[str, Any]) -> bool:
    return all((state["claims"].get(name) or {}).get("allocation") for _, name, *_ in CLAIMS)


def claims_prepared(state: dict[str, Any]) -> bool:
    return all((state["claims"].get(name) or {}).get("devices") for _, name, *_ in CLAIMS)


# What a phase of the fault-free run must reach before its quiet end counts: on a busy machine
# the store can stay quiet for a while before the controller's first write.
PHASE_DONE: dict[str, Callable[[dict[str, Any]], bool]] = {
    "allocation": claims_allocated,
    "prepare": claims_prepared,
}


def run_chaos(seed: int, rate: float, baseline: ChaosRun | None = None, quiet: float = 1.5) -> ChaosRun:
    """One run; without ``baseline`` (the fault-free run) each phase ends when the store is quiet."""
    run = ChaosRun(rate, seed)
    crashes: list[str] = []
    previous_hook = threading.excepthook

    def record_crash(args: threading.ExceptHookArgs) -> None:
        crashes.append(
            f"{args.thread.name if args.thread else '?'}: {args.exc_type.__name__}: {args.exc_value}"
        )

    threading.excepthook = record_crash
    before = set(threading.enumerate())
    with tempfile.TemporaryDirectory(prefix="gpu-chaos-") as tmp:
        world = ChaosWorld(Path(tmp), seed, rate)
        try:
            world.start()
            components = [  # the fake server's request threads come and go
                t for t in threading.enumerate()
                if t not in before and t.daemon and "process_request" not in t.name
            ]  # fmt: skip
            phases: list[tuple[str, Callable[[], object]]] = [
                ("inventory", lambda: None),
                ("allocation", world.pods_on_nodes),
                ("prepare", lambda: setattr(run, "prepare_attempts", world.prepare_all())),
            ]
            started = time.monotonic()
            for phase, act in phases:
                act()
                wanted = baseline.phases[phase] if baseline else None
                state, _ = converge(world.store, wanted, quiet)
                done, deadline = PHASE_DONE.get(phase), time.monotonic() + PHASE_TIMEOUT
                while wanted is None and done is not None and not done(state) and time.monotonic() < deadline:
                    state, _ = converge(world.store, None, quiet)
                run.phases[phase], run.seconds[phase] = state, time.monotonic() - started
                if phase == "allocation" and not claims_allocated(state):
                    raise AssertionError("gpu-dra-controller did not allocate every claim")
            time.sleep(quiet)  # no write after convergence may undo it
            run.phases["final"] = snapshot(world.store)
            run.dead = [t.name for t in components if not t.is_alive()]
        finally:
            world.close()
            threading.excepthook = previous_hook
        run.requests = Counter(component_of(r) for r in world.server.requests)
        run.faults, run.faults_by_component = world.chaos.summary(), world.chaos.by_component
        run.creates, run.crashes = world.store.creates, crashes
    return run
