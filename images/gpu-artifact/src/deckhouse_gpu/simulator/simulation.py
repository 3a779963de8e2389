# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulated cluster behind ``make demo``: the real components, in one process.

One in-memory API server; per node a host root on disk built like real sysfs, a simulated NVML,
and the real gpu-node-agent and gpu-handler loops in threads; one gpu-controller. Scenario steps
change the hardware, NVML and validator pods and send the uevents the kernel would send; the
components react exactly as they would on a cluster.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from deckhouse_gpu.cmd.gpu_controller import ControllerOptions, start_controller
from deckhouse_gpu.cmd.gpu_dra_controller.run import start_dra_controller
from deckhouse_gpu.domain.inventory.health.xid import classify
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import (
    EVENTS,
    NODES,
    PHYSICAL_GPUS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    NotFound,
)
from deckhouse_gpu.services.allocation.dra_controller import DraControllerSettings
from deckhouse_gpu.services.inventory.gpu_controller import ControllerSettings
from deckhouse_gpu.simulator.allocation import pod_on_node
from deckhouse_gpu.simulator.api.feature_gates import gates_off
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.node import SimulatedNode, build_node, set_validator, start_components
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE, allocate, claim_ref, describe_prepare
from deckhouse_gpu.simulator.scenario import Scenario, ScenarioError, Step
from deckhouse_gpu.simulator.sharing import cards_of_claim, describe_cards
from deckhouse_gpu.simulator.vfio import describe_cards as vfio_cards
from deckhouse_gpu.simulator.vfio import describe_payload
from deckhouse_gpu.simulator.vm_claims import delete_pod, describe_metadata, gpu_class, vm_pod

SETTLE_TIMEOUT = 60.0  # only a stuck world waits this long; a loaded CI machine can take over 15 s
QUIET_SECONDS = 0.3  # no API write and every loop idle for this long: the world has settled
# At start a chain of components (agent, controller, handler) reacts to each other's first writes
# through watches; on a loaded machine one hop can take longer than a step's quiet window. It must
# stay well below the heartbeat: with many nodes a longer window may never come.
START_QUIET_SECONDS = 0.5


def _xid_heard(node: SimulatedNode, address: str, number: int) -> str:
    """The driver reports the Xid; says whether gpu-handler's event set got it (the settle then
    waits until the watcher took it, node.idle)."""
    if node.nvml.inject_xid(address, number):
        return f"the driver reports it ({classify(number).meaning}); gpu-handler's NVML event set gets it"
    return "the driver reports it, but no NVML event set watches the card: gpu-handler misses it"


class SimulatedCluster:
    def __init__(self, scenario: Scenario, workdir: Path | None = None) -> None:
        self.scenario = scenario
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-sim-") if workdir is None else None
        self.workdir = workdir or Path(self._tmp.name if self._tmp else ".")
        self.api = MemoryKube()
        self.api.version = (1, scenario.settings.kubernetes_minor)
        if off := scenario.settings.gates_off:  # the simulated API server drops their fields
            self.api.drop_fields = gates_off(
                partitionable="DRAPartitionableDevices" in off,
                consumable="DRAConsumableCapacity" in off,
                taints="DRADeviceTaints" in off,
            )
        self.clock = SystemClock()
        self.nodes: dict[str, SimulatedNode] = {}
        self.report: list[str] = []  # what the last kubelet step printed
        self._health_seen: dict[str, list[str]] = {}  # node -> health lines last shown
        self._controller_stop = threading.Event()

    def start(self) -> None:
        """Builds every host first, then starts the components together, as a booting cluster would."""
        for spec in self.scenario.nodes:
            labels = {"kubernetes.io/hostname": spec.name}
            self.api.create(NODES, {"metadata": {"name": spec.name, "labels": labels}})
            self.nodes[spec.name] = build_node(spec, HostBuilder(self.workdir / spec.name))
            if spec.gpus:
                set_validator(self.api, spec.name, spec.validator)
        settings = ControllerSettings(debounce_seconds=0.05)
        start_controller(
            self.api, self._controller_stop, ControllerOptions(settings=settings, leader_elect=False)
        )
        start_dra_controller(
            self.api,
            self._controller_stop,
            leader_elect=False,
            pinned_version=f"1.{self.scenario.settings.kubernetes_minor}",
            settings=DraControllerSettings(debounce_seconds=0.02, audit_debounce_seconds=0.1),
        )
        for node in self.nodes.values():
            start_components(node, self.api, self.clock, self.scenario.settings)
        self.settle(START_QUIET_SECONDS)

    def apply(self, step: Step) -> None:
        """Changes the world as the step says, with the events the kernel or kubelet would send."""
        args = step.args
        self.report = []
        if step.kind == "wait":
            time.sleep(float(args["seconds"]))
        elif step.kind == "deleteObject":
            self.api.delete(PHYSICAL_GPUS, str(args["name"]))
        elif step.kind == "gpuClass":
            self.report = gpu_class(self.api, args)
        else:
            self._apply_to_node(step.kind, self._node(str(args.get("node"))), args)

    def _apply_to_node(self, kind: str, node: SimulatedNode, args: dict[str, Any]) -> None:
        address = str(args.get("address", ""))
        if kind == "addGpu":
            numa = args.get("numaNode")
            node.add_gpu(str(args["model"]), address, args.get("driver", "nvidia"), numa)
        elif kind == "removeGpu":
            node.remove_gpu(address)
        elif kind == "bindDriver":
            node.bind_driver(address, args.get("driver"))
        elif kind == "breakNvml":
            if args.get("failure", "lost") == "library":
                node.nvml.fail_library()
            else:
                node.nvml.fail_device(address, "GPU is lost")
        elif kind == "xid":
            self.report = [f"  Xid {args['xid']} on {address}: {_xid_heard(node, address, int(args['xid']))}"]
        elif kind == "repairNvml":
            node.nvml.clear_failures()
            # Nothing announces a repaired card: gpu-handler notices at its failing card's next retry
            # (every half heartbeat here, simulator/node.py). Waiting that long lets the step show
            # the recovery (healthy, untainted) instead of racing the retry against settle().
            time.sleep(max(self.scenario.settings.heartbeat_seconds / 2, 0.1))
        elif kind in ("prepareClaim", "unprepareClaim"):
            self.report = self._kubelet(kind, node, args)
        elif kind == "podOnNode":
            self.report = pod_on_node(self.api, node.spec.name, args)
        elif kind == "vmPod":
            self.report = self._vm_pod(node, args)
        elif kind == "deletePod":
            self.report = self._delete_pod(node, str(args["name"]))
        elif kind == "setBusy":
            pids = tuple(int(pid) for pid in args.get("pids") or [])
            node.nvml.set_busy(address, bool(pids), pids)
            self.report = [f"  processes on {address}: {', '.join(map(str, pids)) or 'none'} (nvidia-smi)"]
        elif kind == "labelNode":
            labels = {
                str(key): (None if value is None else str(value)) for key, value in args["labels"].items()
            }
            self.api.patch(NODES, node.spec.name, {"metadata": {"labels": labels}})
        elif kind == "setValidator":
            set_validator(self.api, node.spec.name, str(args["state"]))
        elif kind == "deleteNode":
            # The machine is decommissioned: its components stop, the garbage collector does the rest.
            node.stop.set()
            del self.nodes[node.spec.name]
            self.api.delete(NODES, node.spec.name)

    def _kubelet(self, kind: str, node: SimulatedNode, args: dict[str, Any]) -> list[str]:
        """What the kubelet does for a Pod's claim: NodePrepareResources / NodeUnprepareResources."""
        assert node.prepare is not None
        name = str(args["name"])
        if kind == "prepareClaim":
            if args.get("devices"):  # as the scheduler would have allocated them
                percent, config = args.get("sharePercent"), args.get("config")
                allocate(
                    self.api,
                    node.spec.name,
                    name,
                    [str(device) for device in args["devices"]],
                    share_percent=None if percent is None else float(percent),
                    config=config,
                    pod=args.get("pod"),
                )
            try:
                ref = claim_ref(self.api, name)
            except NotFound:
                return [f"  claim {name} does not exist: give its devices, or create it with podOnNode first"]
            result = node.prepare.prepare([ref])[ref.uid]
            lines = describe_prepare(result, node.builder.root / "etc/cdi", ref.uid)
        else:
            ref = claim_ref(self.api, name)
            error = node.prepare.unprepare([ref])[ref.uid]
            lines = [f"  unprepare failed: {error}" if error else f"  unprepared {name}"]
        # What nvidia-smi and kubectl would show of the claim's cards now: compute mode,
        # time-slice and MPS daemon, set (or given back) by the step.
        claim = self.api.get(RESOURCE_CLAIMS, name, namespace=CLAIM_NAMESPACE)
        if node.spec.iommu:  # where the cards' functions are now, once the node agent followed them
            self.settle()
            cards = cards_of_claim(claim, node.models)
            root = node.builder.root
            return [
                *lines,
                *vfio_cards(self.api, node.spec.name, root, cards),
                *describe_payload(root, ref.uid),
            ]
        cards = cards_of_claim(claim, node.settings.values)  # the NVML library may be broken now
        return lines + describe_cards(self.api, node.spec.name, node.settings, cards)

    def _vm_pod(self, node: SimulatedNode, args: dict[str, Any]) -> list[str]:
        """The VM module's claim and KubeVirt's launcher Pod, allocated, then what the kubelet does
        before the Pod's containers start: the claim prepared, with its device metadata."""
        lines, claim = vm_pod(self.api, node.spec.name, args)
        if claim is None or not (
            self.api.get(RESOURCE_CLAIMS, claim, namespace=CLAIM_NAMESPACE).get("status") or {}
        ).get("allocation"):
            return lines
        prepared = self._kubelet("prepareClaim", node, {"name": claim})
        uid = claim_ref(self.api, claim).uid
        return [*lines, *prepared, *describe_metadata(node.builder.root, uid)]

    def _delete_pod(self, node: SimulatedNode, name: str) -> list[str]:
        """The kubelet stops the Pod and unprepares its claims; then the Pod and its claims go."""
        pod = self.api.get(PODS, name, namespace=CLAIM_NAMESPACE)
        lines = []
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            claim = str(entry["resourceClaimName"])
            uid = claim_ref(self.api, claim).uid
            lines += self._kubelet("unprepareClaim", node, {"name": claim})
            left = describe_metadata(node.builder.root, uid)
            lines.append(f"  device metadata of {claim}: {'still there' if left else 'removed'}")
        return [*lines, delete_pod(self.api, name)]

    def _node(self, name: str) -> SimulatedNode:
        if name not in self.nodes:
            raise ScenarioError(f"step names unknown node {name!r}")
        return self.nodes[name]

    def settle(self, quiet: float = QUIET_SECONDS) -> float:
        """Waits until no component has work and the API has been quiet for ``quiet`` seconds; returns
        the seconds it took."""
        started = time.monotonic()
        quiet_since: float | None = None
        version = self.api.resource_version
        while (now := time.monotonic()) - started < SETTLE_TIMEOUT:
            current = self.api.resource_version
            if current != version or not all(node.idle() for node in self.nodes.values()):
                version, quiet_since = current, None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= quiet:
                return quiet_since - started
            time.sleep(0.005)
        raise TimeoutError(f"the simulated cluster did not settle within {SETTLE_TIMEOUT} s")

    def health_changes(self) -> list[str]:
        """The device health lines (as gpu-handler streams them to the kubelet) that changed since
        the last call, prefixed with the node; a node's first lines count as a change only when they
        are not all healthy."""
        changed = []
        for name, node in sorted(self.nodes.items()):
            lines = node.device_health.lines() if node.device_health is not None else []
            before = self._health_seen.get(name)
            self._health_seen[name] = lines
            shown = lines if before is not None else [line for line in lines if ": Healthy" not in line]
            changed += [f"{name}: {line}" for line in shown if line not in (before or [])]
        return changed

    def physical_gpus(self) -> list[dict[str, Any]]:
        return self.api.list(PHYSICAL_GPUS).items

    def resource_slices(self) -> list[dict[str, Any]]:
        return self.api.list(RESOURCE_SLICES).items

    def events(self) -> list[dict[str, Any]]:
        return self.api.list(EVENTS, namespace="default").items

    def __enter__(self) -> SimulatedCluster:
        """Started, and closed when the block ends however it ends."""
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._controller_stop.set()
        for node in self.nodes.values():
            node.stop.set()
        if self._tmp is not None:
            self._tmp.cleanup()
