# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Scenario files for the simulator: nodes with their GPUs, then steps that change the world."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from deckhouse_gpu.domain.inventory.pci import is_pci_address
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule, PolicyError, parse_rules
from deckhouse_gpu.k8s_semantics.versions import KNOWN_RANGE, KNOWN_VERSIONS, parse_minor
from deckhouse_gpu.simulator.host.gpu_catalog import GPU_MODELS

MACHINES = ("bare-metal", "vm", "no-dmi")
VALIDATOR_STATES = ("ready", "not-ready", "missing")
NVML_FAILURES = ("lost", "library")
# The DRA gates whose fields the simulated API server can drop (simulator/api/feature_gates.py);
# every one is on unless the scenario's settings.featureGates says false.
FEATURE_GATES = ("DRAPartitionableDevices", "DRAConsumableCapacity", "DRADeviceTaints")
STEP_KINDS = (
    "addGpu",
    "removeGpu",
    "bindDriver",
    "deleteObject",
    "deleteNode",
    "breakNvml",
    "repairNvml",
    "setValidator",
    "labelNode",
    "podOnNode",
    "gpuClass",
    "vmPod",
    "deletePod",
    "setBusy",
    "xid",
    "prepareClaim",
    "unprepareClaim",
    "wait",
)


class ScenarioError(ValueError):
    pass


@dataclass(frozen=True)
class SimGPU:
    model: str
    address: str
    driver: str | None = "nvidia"
    audio: bool = False  # an HD audio function beside it (function 1), in its IOMMU group
    numa_node: int | None = None  # None: what the machine implies (numa_node_of)


def numa_node_of(machine: str, address: str, given: int | None = None) -> int:
    """The ``numa_node`` sysfs shows for a card: ``given`` when the scenario says, else what a
    two-socket server shows (buses below 0x80 on socket 0, the rest on socket 1); a virtual machine
    has no NUMA affinity (-1), as QEMU shows without a NUMA topology."""
    if given is not None:
        return given
    if machine != "bare-metal":
        return -1
    return 0 if int(address.split(":")[1], 16) < 0x80 else 1


@dataclass(frozen=True)
class SimNode:
    name: str
    machine: str = "bare-metal"
    gpus: list[SimGPU] = field(default_factory=list)
    other_devices: int = 24
    validator: str = "ready"  # the driver validator pod on this node (nodes with GPUs only)
    iommu: bool = False  # IOMMU on (a group per card) and vfio-pci loaded: passthrough can work


@dataclass(frozen=True)
class SimSettings:
    """Timings of the simulated components; short, so a demo shows changes in seconds."""

    health_grace_seconds: float = 2.0
    heartbeat_seconds: float = 1.0
    kubernetes_minor: int = 35  # the API server's version decides the ResourceSlice layout
    gates_off: tuple[str, ...] = ()  # DRA feature gates the simulated API server has off
    mig_profiles: tuple[MigProfileRule, ...] = ()  # as ModuleConfig dra.migProfiles (settings.migProfiles)


@dataclass(frozen=True)
class Step:
    title: str
    kind: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    nodes: list[SimNode]
    steps: list[Step]
    settings: SimSettings = field(default_factory=SimSettings)


def builtin_names() -> list[str]:
    folder = resources.files("deckhouse_gpu.simulator") / "scenarios"
    return sorted(item.name.removesuffix(".yaml") for item in folder.iterdir() if item.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return parse_scenario(path.stem, path.read_text())
    folder = resources.files("deckhouse_gpu.simulator") / "scenarios"
    candidate = folder / f"{name_or_path}.yaml"
    if not candidate.is_file():
        known = ", ".join(builtin_names())
        raise ScenarioError(f"no scenario {name_or_path!r}: give a file path or one of: {known}")
    return parse_scenario(name_or_path, candidate.read_text())


def parse_scenario(name: str, text: str) -> Scenario:
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ScenarioError(f"{name}: a scenario is a mapping with a 'nodes' list")
    nodes = [_node(name, index, raw) for index, raw in enumerate(data["nodes"])]
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{name}: node names must be unique")
    steps = [_step(name, index, raw) for index, raw in enumerate(data.get("steps") or [])]
    raw_settings = data.get("settings") or {}
    gates_off = _gates_off(name, raw_settings.get("featureGates"))
    try:
        settings = SimSettings(
            float(raw_settings.get("healthGraceSeconds", SimSettings.health_grace_seconds)),
            float(raw_settings.get("heartbeatSeconds", SimSettings.heartbeat_seconds)),
            parse_minor(str(raw_settings.get("kubernetesVersion", "1.35"))),
            gates_off,
        )
    except (TypeError, ValueError):
        raise ScenarioError(
            f"{name}: settings.healthGraceSeconds and heartbeatSeconds are numbers,"
            f" kubernetesVersion is one of {KNOWN_RANGE} (a newer one runs as {KNOWN_VERSIONS[-1]})"
        ) from None
    try:
        settings = replace(settings, mig_profiles=parse_rules(raw_settings.get("migProfiles") or []))
    except PolicyError as error:
        raise ScenarioError(f"{name}: settings.{error}") from None
    return Scenario(name, str(data.get("description", "")), nodes, steps, settings)


def _gates_off(scenario: str, raw: Any) -> tuple[str, ...]:
    gates = raw or {}
    if not isinstance(gates, dict) or not all(
        gate in FEATURE_GATES and isinstance(on, bool) for gate, on in gates.items()
    ):
        known = ", ".join(FEATURE_GATES)
        raise ScenarioError(f"{scenario}: settings.featureGates maps {known} to true or false")
    return tuple(gate for gate in FEATURE_GATES if gates.get(gate) is False)


def _node(scenario: str, index: int, raw: Any) -> SimNode:
    where = f"{scenario}: nodes[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ScenarioError(f"{where}: needs a 'name'")
    machine = raw.get("machine", "bare-metal")
    if machine not in MACHINES:
        raise ScenarioError(f"{where}: machine must be one of {', '.join(MACHINES)}")
    gpus = [_gpu(f"{where}.gpus[{i}]", gpu) for i, gpu in enumerate(raw.get("gpus") or [])]
    validator = raw.get("validator", "ready")
    if validator not in VALIDATOR_STATES:
        raise ScenarioError(f"{where}: validator must be one of {', '.join(VALIDATOR_STATES)}")
    return SimNode(
        raw["name"], machine, gpus, int(raw.get("otherDevices", 24)), validator, raw.get("iommu") is True
    )


def _gpu(where: str, raw: Any) -> SimGPU:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expected a mapping with model and address")
    model, address = raw.get("model"), str(raw.get("address", ""))
    if model not in GPU_MODELS:
        raise ScenarioError(f"{where}: unknown model {model!r}; known: {', '.join(GPU_MODELS)}")
    if not is_pci_address(address):
        raise ScenarioError(f"{where}: {address!r} is not a PCI address like 0000:17:00.0")
    numa = _numa_node(where, raw.get("numaNode"))
    return SimGPU(model, address, raw.get("driver", "nvidia"), raw.get("audio") is True, numa)


def _numa_node(where: str, numa: Any) -> int | None:
    if numa is not None and (isinstance(numa, bool) or not isinstance(numa, int) or numa < -1):
        raise ScenarioError(f"{where}: numaNode is a NUMA node number, or -1 for none")
    return numa


def _step(scenario: str, index: int, raw: Any) -> Step:
    where = f"{scenario}: steps[{index}]"
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expected a mapping")
    kinds = [key for key in STEP_KINDS if key in raw]
    if len(kinds) != 1 or not isinstance(raw[kinds[0]], dict):
        raise ScenarioError(f"{where}: needs exactly one of {', '.join(STEP_KINDS)} with its arguments")
    step = Step(str(raw.get("title", kinds[0])), kinds[0], dict(raw[kinds[0]]))
    if step.kind == "breakNvml" and step.args.get("failure", "lost") not in NVML_FAILURES:
        raise ScenarioError(f"{where}: breakNvml.failure must be one of {', '.join(NVML_FAILURES)}")
    if step.kind == "addGpu":
        _numa_node(f"{where}.addGpu", step.args.get("numaNode"))
    if step.kind == "setValidator" and step.args.get("state") not in VALIDATOR_STATES:
        raise ScenarioError(f"{where}: setValidator.state must be one of {', '.join(VALIDATOR_STATES)}")
    if step.kind == "labelNode" and not isinstance(step.args.get("labels"), dict):
        raise ScenarioError(f"{where}: labelNode needs labels (a mapping; null removes a label)")
    if step.kind in ("prepareClaim", "unprepareClaim") and not isinstance(step.args.get("name"), str):
        raise ScenarioError(f"{where}: {step.kind} needs the claim's name")
    if step.kind == "prepareClaim":
        _check_share(where, step.args)
        _check_pod(where, step.args)
    if step.kind == "setBusy" and not all(isinstance(pid, int) for pid in step.args.get("pids") or []):
        raise ScenarioError(f"{where}: setBusy.pids is a list of process IDs (empty: the card is idle)")
    if step.kind == "podOnNode" and not (
        isinstance(step.args.get("name"), str) and isinstance(step.args.get("deviceClass"), str)
    ):
        raise ScenarioError(f"{where}: podOnNode needs the pod's (and claim's) name and a deviceClass")
    if step.kind == "podOnNode" and not isinstance(step.args.get("count", 1), int):
        raise ScenarioError(f"{where}: podOnNode.count is a number of devices")
    if step.kind == "xid" and not (
        is_pci_address(str(step.args.get("address", "")))
        and isinstance(step.args.get("xid"), int)
        and not isinstance(step.args.get("xid"), bool)
        and step.args["xid"] > 0
    ):
        raise ScenarioError(f"{where}: xid needs the card's address and the Xid number (xid: 79)")
    if step.kind == "gpuClass" and not (
        isinstance(step.args.get("name"), str) and isinstance(step.args.get("spec"), dict)
    ):
        raise ScenarioError(f"{where}: gpuClass needs the class's name and its spec")
    if step.kind == "vmPod" and not all(isinstance(step.args.get(k), str) for k in ("vm", "gpuClass", "pod")):
        raise ScenarioError(f"{where}: vmPod needs the VM's name, its gpuClass and the launcher pod's name")
    if step.kind == "deletePod" and not isinstance(step.args.get("name"), str):
        raise ScenarioError(f"{where}: deletePod needs the pod's name")
    if step.kind == "wait" and not isinstance(step.args.get("seconds"), int | float):
        raise ScenarioError(f"{where}: wait needs seconds")
    return step


def _check_share(where: str, args: dict[str, Any]) -> None:
    """A share of a card as the scheduler allocates it: the share it consumed and the claim's
    opaque config (GpuConfig parameters); both only with devices, which the step allocates."""
    percent, config = args.get("sharePercent"), args.get("config")
    if (percent is not None or config is not None) and not args.get("devices"):
        raise ScenarioError(f"{where}: sharePercent and config need the devices the step allocates")
    if percent is not None and (
        isinstance(percent, bool) or not isinstance(percent, int | float) or not 0 < percent <= 100
    ):
        raise ScenarioError(f"{where}: prepareClaim.sharePercent is a number above 0 and up to 100")
    if config is not None and not isinstance(config, dict):
        raise ScenarioError(f"{where}: prepareClaim.config is the opaque parameters (a GpuConfig mapping)")


def _check_pod(where: str, args: dict[str, Any]) -> None:
    """The Pod the claim is reserved for: a name and its annotations (``gpu.deckhouse.io/vfio``)."""
    pod = args.get("pod")
    if pod is None:
        return
    if not isinstance(pod, dict) or not isinstance(pod.get("name"), str):
        raise ScenarioError(f"{where}: prepareClaim.pod needs the Pod's name (and optional annotations)")
    if not isinstance(pod.get("annotations") or {}, dict):
        raise ScenarioError(f"{where}: prepareClaim.pod.annotations is a mapping")
