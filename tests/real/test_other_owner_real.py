# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Another owner of a node's GPUs, on real components (issue 36, DESIGN.md D16): two real kubelets
of 1.35 and 1.36, a real ``gpu-handler run`` beside each, the real scheduler.

Node A has a device plugin (tests/support/device_plugin.py, grpcio on the kubelet's v1beta1 API)
advertising ``nvidia.com/gpu`` before gpu-handler starts; node B has none. A DeviceClass with
``extendedResourceName: nvidia.com/gpu`` lets unchanged Pods run through DRA where no plugin serves
the resource (DRAExtendedResource). A publishes nothing while its plugin runs and says why (the
PhysicalGPU condition, an Event); the scheduler sends a ``nvidia.com/gpu: 1`` Pod to the plugin on A
and another through DRA on B; once the plugin stops, A's cards are offered within a minute, and at
no moment are A's cards offered while the kubelet advertises them through the plugin.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.cmd.gpu_dra_controller.run import start_dra_controller
from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.services.allocation.gpuclass_controller import GpuClassSettings
from testkit.real_cluster import KUBELET_VERSIONS, ApiError, Clusters, RealCluster
from tests.real.conftest import cluster_of
from tests.real.handler_world import CARD_A, CARD_B, DRIVER, WHOLE_A, WHOLE_B, HandlerNode, handler_node
from tests.real.test_gpuclass_real import GROUP_VERSION, installed
from tests.support.device_plugin import DevicePlugin

log = logging.getLogger(__name__)
NVIDIA_GPU = "nvidia.com/gpu"
CLASS = "gpuo-nvidia-gpu"
RESOURCE = "resource.k8s.io/v1"


def device_class() -> dict[str, Any]:
    """docs/MIGRATION.md's class: whole cards of the module under the device plugin's name."""
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": (
                            f'device.driver == "{DRIVER}" && '
                            f'device.attributes["{DRIVER}"].deviceType == "Physical" && '
                            f'!("sharePercent" in device.capacity["{DRIVER}"])'
                        )
                    }
                }
            ],
            "extendedResourceName": NVIDIA_GPU,
        },
    }


def allocatable(cluster: RealCluster, node: str, resource: str = NVIDIA_GPU) -> int:
    status = cluster.get("v1", "Node", node).get("status") or {}
    return int((status.get("allocatable") or {}).get(resource, "0"))


def owner_condition(node: HandlerNode, address: str) -> tuple[str, str, str] | None:
    card = node.cluster.get("gpu.deckhouse.io/v1alpha1", "PhysicalGPU", physical_gpu_name(node.node, address))
    for cond in (card.get("status") or {}).get("conditions") or []:
        if cond["type"] == "OtherOwner":
            return cond["status"], cond["reason"], cond["message"]
    return None


def node_events(node: HandlerNode, reason: str) -> list[dict[str, Any]]:
    found = node.cluster.request(
        "GET", f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{node.node}"
    )
    return [e for e in found["items"] if e.get("reason") == reason]


@dataclass
class Sampler:
    """Samples node A twice a second: its devices in our slices, then the kubelet's allocatable
    (in that order, so that offers published after the plugin went never meet a stale count)."""

    node: HandlerNode
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # time, devices, allocatable
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                devices = len(self.node.devices())
                count = allocatable(self.node.cluster, self.node.node)
            except (ApiError, OSError):  # a failed sample is no sample
                continue
            self.samples.append((time.monotonic(), devices, count))

    def both(self) -> list[tuple[float, int, int]]:
        return [s for s in self.samples if s[1] and s[2]]


@dataclass
class TwoNodes:
    cluster: RealCluster
    a: HandlerNode
    b: HandlerNode
    plugin: DevicePlugin
    sampler: Sampler


@pytest.fixture(scope="module", params=KUBELET_VERSIONS, ids=[f"k8s-{v}" for v in KUBELET_VERSIONS])
def nodes(request: pytest.FixtureRequest, clusters: Clusters) -> Iterator[TwoNodes]:
    cluster = cluster_of(clusters, str(request.param))
    version = cluster.version.replace(".", "")
    plugins: list[DevicePlugin] = []

    def start_plugin(node: HandlerNode) -> None:
        socket = node.kubelet.plugins_dir / "test-nvidia" / "dp.sock"
        plugin = DevicePlugin(node.kubelet.registry_dir, socket, NVIDIA_GPU, ["GPU-test-0", "GPU-test-1"])
        plugins.append(plugin.start())
        node.wait(plugin.registered.is_set, 60, "the kubelet registers the device plugin")
        node.wait(lambda: allocatable(cluster, node.node) == 2, 60, "the kubelet advertises nvidia.com/gpu")

    cluster.apply(device_class())
    try:
        with (
            handler_node(cluster, f"gpuo-a{version}", before_handler=start_plugin) as a,
            handler_node(cluster, f"gpuo-b{version}") as b,
        ):
            sampler = Sampler(a)
            thread = threading.Thread(target=sampler.run, daemon=True)
            thread.start()
            for node in (a, b):
                node.wait(node.registrations, 90, "the kubelet registers gpu-handler")
            try:
                yield TwoNodes(cluster, a, b, plugins[0], sampler)
            finally:
                sampler.stop.set()
                thread.join(5)
                for plugin in plugins:
                    plugin.stop()
    finally:
        cluster.delete(RESOURCE, "DeviceClass", CLASS)


def test_the_plugins_node_publishes_nothing_and_says_why(nodes: TwoNodes) -> None:
    a, b = nodes.a, nodes.b
    b.wait(lambda: {WHOLE_A, WHOLE_B} <= b.devices(), 60, "B's offers")
    a.wait(lambda: owner_condition(a, CARD_A) and owner_condition(a, CARD_B), 60, "A's OtherOwner")
    for address in (CARD_A, CARD_B):
        status, reason, message = owner_condition(a, address)  # type: ignore[misc]
        assert (status, reason) == ("True", "DevicePlugin")
        assert "nvidia.com/gpu: 2" in message
        assert owner_condition(b, address)[:2] == ("False", "NoOtherOwner")  # type: ignore[index]
    assert a.devices() == set()
    (event,) = node_events(a, "OtherGPUOwner")
    assert event["type"] == "Warning"
    assert "nvidia.com/gpu" in event["message"]
    assert node_events(b, "OtherGPUOwner") == []
    assert a.handler is not None
    # Not once since it started: the plugin was there before gpu-handler (the sampler cannot see
    # a slice that came and went between two samples, the handler's log would).
    assert "ResourceSlices published" not in a.handler.log.read_text()
    assert b.handler is not None
    assert "ResourceSlices published" in b.handler.log.read_text()  # what the line looks like
    assert "other GPU owner" in a.handler.log.read_text()


def test_the_scheduler_sends_nvidia_gpu_to_the_plugin_on_a_and_to_dra_on_b(nodes: TwoNodes) -> None:
    a, b = nodes.a, nodes.b
    b.wait(lambda: {WHOLE_A, WHOLE_B} <= b.devices(), 60, "B's offers")
    a.pod("legacy", limits={NVIDIA_GPU: "1"})
    b.pod("migrated", limits={NVIDIA_GPU: "1"})
    on_a = a.wait_running("legacy")
    on_b = b.wait_running("migrated")
    # A: the device plugin's Allocate, no claim; B: the scheduler's claim on our devices.
    assert nodes.plugin.allocated
    assert nodes.plugin.allocated[-1][0].startswith("GPU-test-")
    assert "extendedResourceClaimStatus" not in on_a["status"]
    claim = on_b["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    allocation = b.get_claim(claim)["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"]) for r in allocation] == [(DRIVER, f"gpus/{b.node}")]
    assert allocation[0]["device"] in (WHOLE_A, WHOLE_B)
    assert a.devices() == set()  # running a plugin Pod changed nothing on A
    a.delete_pod("legacy")
    b.delete_pod("migrated")


def class_conflict(cluster: RealCluster, name: str) -> tuple[str, str, str] | None:
    found = cluster.get(GROUP_VERSION, "GPUClass", name)
    for cond in (found.get("status") or {}).get("conditions") or []:
        if cond["type"] == "DevicePluginConflict":
            return cond["status"], cond["reason"], cond["message"]
    return None


def test_a_gpu_class_naming_a_resource_a_plugin_serves_beside_its_devices_says_so(nodes: TwoNodes) -> None:
    # Bad input: B publishes the class's whole A30s and a device plugin on B serves the resource the
    # class names. B's cards stay ours (example.com/gpu is no NVIDIA GPU resource), so the scheduler
    # would send such Pods to the plugin there: the GPUClass's DevicePluginConflict says so.
    cluster, b = nodes.cluster, nodes.b
    resource = "example.com/gpu"
    installed(cluster)
    socket = b.kubelet.plugins_dir / "test-example" / "dp.sock"
    plugin = DevicePlugin(b.kubelet.registry_dir, socket, resource, ["EX-0"]).start()
    name = f"gpuo-example-{cluster.version.replace('.', '-')}"
    stop = threading.Event()
    running = None
    try:
        b.wait(plugin.registered.is_set, 60, "the kubelet registers the example plugin")
        b.wait(lambda: allocatable(cluster, b.node, resource) == 1, 60, "the kubelet advertises it")
        spec = {"deviceKind": "Whole", "extendedResourceName": resource}
        cluster.create(
            {"apiVersion": GROUP_VERSION, "kind": "GPUClass", "metadata": {"name": name}, "spec": spec}
        )
        settings = GpuClassSettings(
            debounce_seconds=0.01, inventory_debounce_seconds=0.1, watch_timeout_seconds=5
        )
        api = load_kube(str(cluster.admin_kubeconfig))
        running = start_dra_controller(
            api, stop, leader_elect=False, pinned_version=cluster.version, class_settings=settings
        )
        b.wait(lambda: (class_conflict(cluster, name) or ("",))[0] == "True", 60, "DevicePluginConflict")
        _, reason, message = class_conflict(cluster, name)  # type: ignore[misc]
        assert reason == "ServedByDevicePlugin"
        assert f"({b.node})" in message
        assert resource in message
        # The scheduler does as the condition says: the Pod gets the plugin's device on B.
        b.pod("example", limits={resource: "1"})
        pod = b.wait_running("example")
        assert "extendedResourceClaimStatus" not in pod["status"]
        assert plugin.allocated == [["EX-0"]]
        b.delete_pod("example")
        plugin.stop()
        b.wait(lambda: allocatable(cluster, b.node, resource) == 0, 60, "the plugin's resource at 0")
        b.wait(lambda: (class_conflict(cluster, name) or ("",))[0] == "False", 60, "the conflict gone")
        assert class_conflict(cluster, name)[1] == "NotServedByDevicePlugin"  # type: ignore[index]
    finally:
        plugin.stop()
        stop.set()
        if running is not None:
            running.shutdown()
        with contextlib.suppress(ApiError):
            cluster.delete(GROUP_VERSION, "GPUClass", name)
        with contextlib.suppress(ApiError):
            cluster.delete(RESOURCE, "DeviceClass", name)


def test_offers_come_within_a_minute_of_the_plugin_going_and_never_overlap_it(nodes: TwoNodes) -> None:
    a = nodes.a
    assert a.devices() == set()
    nodes.plugin.stop()
    stopped = time.monotonic()
    a.wait(lambda: allocatable(nodes.cluster, a.node) == 0, 60, "the kubelet reports 0 allocatable")
    a.wait(lambda: {WHOLE_A, WHOLE_B} <= a.devices(), 60, "A's offers after the plugin went")
    # The wait above bounds it (a minute); the figure is logged (pytest --log-cli-level=INFO).
    log.info("offers after the plugin stopped", extra={"seconds": round(time.monotonic() - stopped, 2)})
    assert owner_condition(a, CARD_A)[:2] == ("False", "NoOtherOwner")  # type: ignore[index]
    (gone,) = node_events(a, "OtherGPUOwnerGone")
    assert gone["type"] == "Normal"
    # The handler was not restarted: the same process did all of it.
    assert a.handler is not None
    assert a.handler.alive()
    assert a.starts == 1
    time.sleep(1.5)  # a few more samples with the offers there
    assert nodes.sampler.samples, "no sample of node A was taken"
    assert any(s[2] for s in nodes.sampler.samples)  # the plugin's time was sampled ...
    assert any(s[1] for s in nodes.sampler.samples)  # ... and the offers' time
    assert nodes.sampler.both() == [], "A's cards offered by the plugin and by DRA at once"


def test_after_the_plugin_went_nvidia_gpu_pods_on_a_run_through_dra(nodes: TwoNodes) -> None:
    # The kubelet still reports the plugin's capacity (its grace period) at 0 allocatable; the
    # scheduler (1.35, 1.36) leaves the resource to DRA as soon as allocatable is 0.
    a = nodes.a
    a.wait(lambda: {WHOLE_A, WHOLE_B} <= a.devices(), 60, "A's offers")
    status = nodes.cluster.get("v1", "Node", a.node)["status"]
    assert status["capacity"].get(NVIDIA_GPU) == "2"
    assert status["allocatable"].get(NVIDIA_GPU) == "0"
    allocations = len(nodes.plugin.allocated)
    a.pod("after", limits={NVIDIA_GPU: "1"})
    pod = a.wait_running("after")
    claim = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    (result,) = a.get_claim(claim)["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"] in (WHOLE_A, WHOLE_B)) == (f"gpus/{a.node}", True)
    assert len(nodes.plugin.allocated) == allocations  # the stopped plugin was asked nothing
    # The next case brings the plugin back under this Pod.


def test_a_plugin_coming_back_stops_new_offers_and_leaves_the_prepared_claim(nodes: TwoNodes) -> None:
    a = nodes.a
    pod = a.get_pod("after")
    claim = a.get_claim(pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"])
    uid = claim["metadata"]["uid"]
    assert a.checkpoint()[uid]["state"] == "PrepareCompleted"
    back = time.monotonic()
    nodes.plugin.start()
    a.wait(nodes.plugin.registered.is_set, 60, "the kubelet registers the device plugin again")
    a.wait(lambda: allocatable(nodes.cluster, a.node) == 2, 60, "the kubelet advertises nvidia.com/gpu")
    a.wait(lambda: not a.devices(), 60, "A's offers withdrawn")
    # The other way round the owner comes first: for a moment the kubelet advertises the plugin
    # while A's offers are still there (why docs/MIGRATION.md drains a node before the rollback).
    overlap = [t for t, devices, count in nodes.sampler.samples if t >= back and devices and count]
    log.info("plugin back, offers still there", extra={"seconds": round(len(overlap) * 0.5, 1)})
    assert a.checkpoint()[uid]["state"] == "PrepareCompleted"  # left alone: its Pod runs on
    assert a.get_pod("after")["status"]["phase"] == "Running"
    came = [e for e in node_events(a, "OtherGPUOwner") if claim["metadata"]["name"] in e["message"]]
    assert len(came) == 1, node_events(a, "OtherGPUOwner")  # the claim is named
    assert owner_condition(a, CARD_A)[:2] == ("True", "DevicePlugin")  # type: ignore[index]
    # Its Pod ends: the kubelet unprepares the claim on the held card, as it must.
    a.delete_pod("after")
    a.wait(lambda: uid not in a.checkpoint(), 30, "the claim unprepared")
    assert not a.devices()  # and nothing is offered while the plugin is there
