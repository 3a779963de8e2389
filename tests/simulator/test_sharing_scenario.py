# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The built-in ``sharing`` scenario: two MPS shares of one A30 with their limits in the CDI spec,
one MPS daemon Pod, a TimeSlicing share refused, and the card given back when both are gone.

The facts are read from the simulated world after each step (the claim's CDI spec, the card's
settings, the daemon Pods in the API), then the CLI run is checked to print them."""

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.domain.prepare.mps_pod import daemons_selector
from deckhouse_gpu.ports.kube import PODS, RESOURCE_CLAIMS
from deckhouse_gpu.ports.sharing import ComputeMode
from deckhouse_gpu.simulator.cli import main
from deckhouse_gpu.simulator.node import SimulatedNode
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE
from deckhouse_gpu.simulator.scenario import load_scenario
from deckhouse_gpu.simulator.sharing import MPS_NAMESPACE, PLUGIN_DIR
from deckhouse_gpu.simulator.simulation import SimulatedCluster

NODE, CARD, DEVICE = "worker-1", "0000:17:00.0", "gpu-0000-17-00-0"
DAEMON = f"gpu-mps-{NODE}-{DEVICE}"
A30_MIB = 24576
PUBLISH_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(load_scenario("sharing")) as cluster:
        yield cluster


def step(cluster: SimulatedCluster, index: int) -> list[str]:
    cluster.apply(cluster.scenario.steps[index])
    cluster.settle()
    return cluster.report


def node(cluster: SimulatedCluster) -> SimulatedNode:
    return cluster.nodes[NODE]


def claim_uid(cluster: SimulatedCluster, name: str) -> str:
    return str(cluster.api.get(RESOURCE_CLAIMS, name, namespace=CLAIM_NAMESPACE)["metadata"]["uid"])


def spec_of(cluster: SimulatedCluster, name: str) -> dict[str, Any] | None:
    path = node(cluster).builder.root / "etc/cdi" / claim_spec_file(claim_uid(cluster, name))
    return json.loads(path.read_text()) if path.exists() else None


def mps_edits(cluster: SimulatedCluster, name: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The env (by name) and mounts (host, container) of the claim's one CDI device."""
    spec = spec_of(cluster, name)
    assert spec is not None
    [device] = spec["devices"]
    edits = device["containerEdits"]
    env = dict(item.split("=", 1) for item in edits.get("env", []))
    return env, [(m["hostPath"], m["containerPath"]) for m in edits.get("mounts", [])]


def card_uuid(cluster: SimulatedCluster) -> str:
    """The card's UUID once gpu-handler has published it. The start's settle can end before the
    handler hears of a PhysicalGPU the agent created on a loaded machine (the watch event is late),
    and the steps need the card published, as the scheduler does before it allocates."""
    deadline = time.monotonic() + PUBLISH_TIMEOUT
    while time.monotonic() < deadline:
        cards = cluster.physical_gpus()
        state = ((cards[0].get("status") or {}).get("currentState") or {}) if cards else {}
        if uuid := (state.get("nvidia") or {}).get("gpuUUID"):
            return str(uuid)
        time.sleep(0.05)
    raise AssertionError(f"gpu-handler did not publish {CARD} within {PUBLISH_TIMEOUT} s")


def daemon_pods(cluster: SimulatedCluster) -> list[dict[str, Any]]:
    return cluster.api.list(PODS, label_selector=daemons_selector(NODE), namespace=MPS_NAMESPACE).items


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])


def test_the_sharing_scenario_step_by_step(cluster: SimulatedCluster) -> None:
    settings = node(cluster).settings
    uuid = card_uuid(cluster)
    step(cluster, 0)  # the sharing label
    assert settings.compute_mode(CARD) == ComputeMode.DEFAULT
    assert daemon_pods(cluster) == []

    report = step(cluster, 1)
    env, mounts = mps_edits(cluster, "mps-small")
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == f"{uuid}={A30_MIB // 4}M" == f"{uuid}=6144M"
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == "/run/nvidia-mps"
    unit_dir = f"{PLUGIN_DIR}/mps/{DEVICE}"
    assert mounts[:2] == [(f"{unit_dir}/pipe", "/run/nvidia-mps"), (f"{unit_dir}/shm", "/dev/shm")]
    # Beside the MPS directories: the claim's device metadata file (KEP-5304).
    assert [container for _, container in mounts[2:]] == [
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/mps-small/gpu/gpu.deckhouse.io-metadata.json"
    ]
    for host_path, _ in mounts[:2]:  # the simulated kubelet made the Pod's hostPath volumes
        assert (node(cluster).builder.root / host_path.lstrip("/")).is_dir()
    stream = (node(cluster).builder.root / mounts[2][0].lstrip("/")).read_text()
    metadata, _ = json.JSONDecoder().raw_decode(stream)  # the newest version comes first
    assert metadata["requests"][0]["devices"][0]["name"] == DEVICE
    assert settings.compute_mode(CARD) == ComputeMode.EXCLUSIVE_PROCESS
    [pod] = daemon_pods(cluster)
    assert (pod["metadata"]["name"], pod["spec"]["nodeName"], ready(pod)) == (DAEMON, NODE, True)
    [container] = pod["spec"]["containers"]
    assert {"name": "CUDA_VISIBLE_DEVICES", "value": uuid} in container["env"]
    assert f"  {CARD} time-slice Default, compute mode ExclusiveProcess, MPS daemon {DAEMON} Ready" in report

    step(cluster, 2)
    env, mounts = mps_edits(cluster, "mps-large")
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "75"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == f"{uuid}={A30_MIB * 3 // 4}M" == f"{uuid}=18432M"
    assert mounts[:2] == mps_edits(cluster, "mps-small")[1][:2]  # the same daemon's directories
    assert [p["metadata"]["name"] for p in daemon_pods(cluster)] == [DAEMON]

    report = step(cluster, 3)
    refused = next(line for line in report if "prepare failed" in line)
    assert f"card {CARD} is shared with MPS by claim demo/mps-" in refused
    assert "this claim asks for TimeSlicing with interval Short" in refused
    assert spec_of(cluster, "time-sliced") is None
    assert str(settings.time_slice(CARD)) == "Default"  # the refused share set nothing
    assert settings.compute_mode(CARD) == ComputeMode.EXCLUSIVE_PROCESS

    step(cluster, 4)  # one MPS share left: its daemon and the card's mode stay
    assert spec_of(cluster, "mps-small") is None
    assert spec_of(cluster, "mps-large") is not None
    assert [p["metadata"]["name"] for p in daemon_pods(cluster)] == [DAEMON]
    assert settings.compute_mode(CARD) == ComputeMode.EXCLUSIVE_PROCESS

    report = step(cluster, 5)
    assert spec_of(cluster, "mps-large") is None
    assert daemon_pods(cluster) == []
    assert settings.compute_mode(CARD) == ComputeMode.DEFAULT
    assert str(settings.time_slice(CARD)) == "Default"
    # The mode was set once for the first share and given back once after the last.
    assert [c for c in settings.calls if c[0] == "computeMode"] == [
        ("computeMode", CARD, "ExclusiveProcess"),
        ("computeMode", CARD, "Default"),
    ]
    assert f"  {CARD} time-slice Default, compute mode Default, no MPS daemon" in report


def test_make_demo_with_the_sharing_scenario_prints_the_limits_and_the_card() -> None:
    out = io.StringIO()
    assert main(["--scenario", "sharing"], out=out) == 0
    sections = out.getvalue().split("\nStep ")
    assert len(sections) == 1 + 6
    small, large, sliced, first_gone, last_gone = sections[2:]
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in small
    assert "=6144M" in small
    assert f"mount {PLUGIN_DIR}/mps/{DEVICE}/pipe -> /run/nvidia-mps" in small
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=75" in large
    assert "=18432M" in large
    assert f"prepare failed: card {CARD} is shared with MPS by claim demo/mps-" in sliced
    assert (
        f"{CARD} time-slice Default, compute mode ExclusiveProcess, MPS daemon {DAEMON} Ready" in first_gone
    )
    assert f"{CARD} time-slice Default, compute mode Default, no MPS daemon" in last_gone
