# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler under the real kubelet (issue 29, item 5): a real ``gpu-handler run`` process on a
simulated bare-metal host with two A30s (tests/real/handler_world.py), a real kubelet of 1.35 and
1.36 on Kubernetes' fake container runtime, and the real scheduler and controller-manager.

Everything is judged through the kubelet: it registers the plugin (its log), it runs or holds the
Pods (their phase, conditions and events), it calls NodePrepareResources and
NodeUnprepareResources (its log, and what the handler then leaves on the host), and on 1.36 it
writes our health stream into the Pod's ``allocatedResourcesStatus``. One kubelet and one handler
per version serve every case of this module, in order; each case cleans up its Pods and claims.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.real_cluster import KUBELET_VERSIONS, ApiError, Clusters
from tests.real.conftest import cluster_of
from tests.real.handler_world import (
    CARD_A,
    CARD_B,
    DRIVER,
    VFIO_CLASS,
    WHOLE_A,
    WHOLE_B,
    HandlerNode,
    handler_node,
)
from tests.real.sharing_checks import assert_shared_on_the_host, assert_unshared_on_the_host

MIG_1G = "gpu-a30-mig-1g.6gb"
ON_CARD_A = f'device.attributes["{DRIVER}"].pciAddress == "{CARD_A}"'
ON_CARD_B = f'device.attributes["{DRIVER}"].pciAddress == "{CARD_B}"'
GPU_CONFIG = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "GpuConfig"}


@pytest.fixture(scope="module", params=KUBELET_VERSIONS, ids=[f"k8s-{v}" for v in KUBELET_VERSIONS])
def node(request: pytest.FixtureRequest, clusters: Clusters) -> Iterator[HandlerNode]:
    cluster = cluster_of(clusters, str(request.param))
    with handler_node(cluster, f"gpuh-{cluster.version.replace('.', '')}") as started:
        started.wait(lambda: started.registrations() >= 1, 90, "the kubelet registers gpu-handler")
        yield started


def prepared(node: HandlerNode, claim: dict[str, Any]) -> bool:
    entry = node.checkpoint().get(claim["metadata"]["uid"]) or {}
    return bool(entry.get("state") == "PrepareCompleted")


def kubelet_calls(node: HandlerNode, call: str, uid: str) -> list[str]:
    """The kubelet's log lines of ``call`` (NodePrepareResources, NodeUnprepareResources) for the claim."""
    return node.kubelet_lines(call, uid)


def test_the_kubelet_registers_gpu_handler_and_its_devices_are_published(node: HandlerNode) -> None:
    (line,) = node.kubelet_lines("Registered DRA plugin", f'driverName="{DRIVER}"')[:1]
    # The endpoint the kubelet dialed is the one the handler registered, in its plugin directory.
    assert f"/plugins/{DRIVER}/dra.sock" in line
    devices = node.wait(lambda: node.devices() or None, 60, "the node's ResourceSlices")
    # The two whole A30s, and MIG instances to create at prepare (docs/DRA.md).
    assert {WHOLE_A, WHOLE_B} <= devices
    assert any("-mig-" in device for device in devices)


def test_a_pod_asking_for_an_extended_resource_runs_and_is_unprepared_when_deleted(node: HandlerNode) -> None:
    node.pod("extended", limits={f"{DRIVER}/a30": "1"})
    pod = node.wait_running("extended")
    # The scheduler made a claim for the extended resource (DRAExtendedResource) and the kubelet
    # had it prepared before the container ran.
    claim_name = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    claim = node.get_claim(claim_name)
    uid = claim["metadata"]["uid"]
    assert node.allocated(claim_name)[0] in (WHOLE_A, WHOLE_B)
    assert prepared(node, claim)
    assert kubelet_calls(node, "NodePrepareResources", uid), node.failure_context()

    node.delete_pod("extended")
    node.wait(lambda: uid not in node.checkpoint(), 30, "the claim unprepared")
    assert kubelet_calls(node, "NodeUnprepareResources", uid), node.failure_context()


def test_a_mig_claim_waits_for_the_whole_cards_and_runs_once_they_are_free(node: HandlerNode) -> None:
    node.claim("both-cards", "gpu-a30", count=2)
    node.pod("whole", claim="both-cards")
    node.wait_running("whole")
    mig = node.claim("mig", MIG_1G)
    node.pod("mig", claim="mig")

    def unschedulable() -> bool:
        conditions = node.get_pod("mig").get("status", {}).get("conditions") or []
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)

    node.wait(unschedulable, 60, "the MIG Pod unschedulable while both cards are held")
    assert node.get_pod("mig")["status"]["phase"] == "Pending"
    assert node.allocated("mig") == []
    assert node.mig_instances(CARD_A) == node.mig_instances(CARD_B) == []

    node.delete_pod("whole")
    node.delete_claim("both-cards")
    node.wait_running("mig", timeout=90)
    (device,) = node.allocated("mig")
    card = CARD_A if device.startswith(WHOLE_A) else CARD_B
    assert prepared(node, mig)
    assert len(node.mig_instances(card)) == 1  # the instance was created on the card at prepare

    node.delete_pod("mig")
    node.wait(lambda: mig["metadata"]["uid"] not in node.checkpoint(), 30, "the MIG claim unprepared")
    assert node.mig_instances(card) == []
    node.delete_claim("mig")


def test_a_vfio_claim_passes_the_card_through_and_gives_it_back(node: HandlerNode) -> None:
    claim = node.claim("vm", VFIO_CLASS, selector=ON_CARD_A)
    node.pod("virt-launcher", claim="vm")
    node.wait_running("virt-launcher")
    assert node.allocated("vm") == [WHOLE_A]
    assert prepared(node, claim)
    assert node.driver_of(CARD_A) == "vfio-pci"
    assert node.driver_of(CARD_A[:-1] + "1") == "vfio-pci"  # its audio function went with it
    assert node.driver_of(CARD_B) == "nvidia"

    node.delete_pod("virt-launcher")
    node.wait(lambda: claim["metadata"]["uid"] not in node.checkpoint(), 30, "the VFIO claim unprepared")
    assert node.driver_of(CARD_A) == "nvidia"
    assert node.driver_of(CARD_A[:-1] + "1") == "snd_hda_intel"
    node.delete_claim("vm")


def test_a_sigkilled_handler_registers_again_and_unprepares_the_pods_claim(node: HandlerNode) -> None:
    claim = node.claim("survivor", "gpu-a30", selector=ON_CARD_B)
    node.pod("survivor", claim="survivor")
    node.wait_running("survivor")
    assert prepared(node, claim)
    before = node.registrations()
    assert node.handler is not None
    node.handler.kill()
    node.start_handler()
    node.wait(lambda: node.registrations() > before, 90, "the kubelet registers the new handler")

    node.delete_pod("survivor")
    uid = claim["metadata"]["uid"]
    node.wait(lambda: uid not in node.checkpoint(), 30, "the claim unprepared by the new handler")
    assert kubelet_calls(node, "NodeUnprepareResources", uid), node.failure_context()
    node.delete_claim("survivor")


def test_an_mps_share_and_a_time_sliced_share_run_on_a_sharing_node(node: HandlerNode) -> None:
    node.label("gpu.deckhouse.io/sharing", "true")
    try:
        # A sharing node offers each card once, as a shared device, and no MIG instance.
        node.wait(lambda: node.devices() == {WHOLE_A, WHOLE_B}, 60, "shared offers")
        mps = node.claim(
            "mps",
            "gpu-a30",
            selector=ON_CARD_A,
            share=50,
            config={**GPU_CONFIG, "sharing": {"strategy": "MPS"}},
        )
        sliced = {**GPU_CONFIG, "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Medium"}}}
        timesliced = node.claim("ts", "gpu-a30", selector=ON_CARD_B, share=50, config=sliced)
        node.pod("mps", claim="mps")
        node.pod("ts", claim="ts")
        node.wait_running("mps", timeout=90)
        node.wait_running("ts")
        assert prepared(node, mps)
        assert prepared(node, timesliced)
        assert_shared_on_the_host(node, mps, timesliced)

        # The MPS control daemon is a Pod of its own on this node, run by the real kubelet.
        def daemon_run_by_the_kubelet() -> dict[str, Any] | None:
            (daemon,) = node.mps_daemons()
            status = daemon["status"]
            # A container ID comes from the container runtime: the real kubelet ran the Pod.
            started = [c for c in status.get("containerStatuses") or [] if c.get("containerID")]
            return status if status.get("phase") == "Running" and started else None

        node.wait(daemon_run_by_the_kubelet, 60, "the MPS daemon Pod run by the kubelet")

        node.delete_pod("mps")
        node.delete_pod("ts")
        node.wait(lambda: node.checkpoint() == {}, 30, "both shares unprepared")
        assert_unshared_on_the_host(node, mps, timesliced)
        node.delete_claim("mps")
        node.delete_claim("ts")
    finally:
        node.label("gpu.deckhouse.io/sharing", None)
    node.wait(lambda: any("-mig-" in d for d in node.devices()), 60, "MIG offers back")


def _health(node: HandlerNode, pod: str, device: str) -> str | None:
    """The health the kubelet wrote for ``device`` into the Pod's ``allocatedResourcesStatus``.
    The kubelet names a device by the CDI device ID the prepare returned for it
    (``gpu.deckhouse.io/gpu=<claim UID>-<device>``), or ``<driver>/<pool>/<device>`` without one."""
    status = node.get_pod(pod).get("status", {})
    for container in status.get("containerStatuses") or []:
        for resource in container.get("allocatedResourcesStatus") or []:
            for seen in resource.get("resources") or []:
                if str(seen["resourceID"]).endswith((f"-{device}", f"/{device}")):
                    return str(seen.get("health", ""))
    return None


def test_device_health_from_our_stream_shows_in_the_pods_status(node: HandlerNode) -> None:
    if node.cluster.version != "1.36":
        pytest.skip("ResourceHealthStatus is off by default before 1.36")
    # A lost card is tainted NoExecute (docs/DRA.md, health as device taints), and the real
    # controller-manager then evicts its Pods: this one tolerates the taint, to stay and be watched.
    keep = [{"key": "gpu.deckhouse.io/unhealthy", "operator": "Exists", "effect": "NoExecute"}]
    claim = node.claim("watched", "gpu-a30", selector=ON_CARD_A, tolerations=keep)
    node.pod("watched", claim="watched")
    node.wait_running("watched")
    assert prepared(node, claim)
    node.wait(lambda: _health(node, "watched", WHOLE_A) == "Healthy", 60, "Healthy in the Pod's status")
    assert node.handler is not None
    node.handler.command(f"fail_device {CARD_A}")  # the card falls off the bus
    try:
        node.wait(
            lambda: _health(node, "watched", WHOLE_A) == "Unhealthy", 60, "Unhealthy in the Pod's status"
        )
    finally:
        node.handler.command("clear")
    node.wait(lambda: _health(node, "watched", WHOLE_A) == "Healthy", 60, "Healthy again")
    node.delete_pod("watched")
    node.delete_claim("watched")


UNHEALTHY = [{"key": "gpu.deckhouse.io/unhealthy", "operator": "Exists", "effect": "NoExecute"}]


def _evicted(node: HandlerNode, pod: str) -> str | None:
    """Why the Pod is being or was deleted by the device taint eviction controller: its
    DisruptionTarget condition while it exists, "gone" once it does not."""
    try:
        found = node.get_pod(pod)
    except ApiError as error:
        return "gone" if error.status == 404 else None
    conditions = (found.get("status") or {}).get("conditions") or []
    targets = [c for c in conditions if c["type"] == "DisruptionTarget" and c.get("status") == "True"]
    return str(targets[0].get("reason")) if targets and found["metadata"].get("deletionTimestamp") else None


def test_a_pod_on_a_lost_card_is_evicted_unless_it_tolerates_the_taint(node: HandlerNode) -> None:
    """A lost card is tainted NoExecute in its slice; the real kube-controller-manager's device
    taint eviction controller (DRADeviceTaints) deletes the Pods whose claims do not tolerate it."""
    tolerant = node.claim("tolerant", "gpu-a30", selector=ON_CARD_A, tolerations=UNHEALTHY)
    intolerant = node.claim("intolerant", "gpu-a30", selector=ON_CARD_B)
    node.pod("tolerant", claim="tolerant")
    node.pod("intolerant", claim="intolerant")
    node.wait_running("tolerant")
    node.wait_running("intolerant")
    assert prepared(node, tolerant)
    assert prepared(node, intolerant)
    assert node.handler is not None
    node.handler.command(f"fail_device {CARD_A}")
    node.handler.command(f"fail_device {CARD_B}")
    try:
        reasons: list[str] = []

        def evicted() -> bool:
            reason = _evicted(node, "intolerant")
            if reason is not None:
                reasons.append(reason)
            return reason == "gone"

        node.wait(evicted, 90, "the intolerant Pod evicted by the controller-manager")
        # Seen while it was being deleted, unless it went between two looks; and in its events,
        # which outlive it: the device taint eviction controller did it.
        assert set(reasons) <= {"DeletionByDeviceTaintManager", "gone"}, reasons
        events = node.events("intolerant")
        assert "DeviceTaintManagerEviction" in {reason for reason, _ in events}, events
        node.wait(lambda: intolerant["metadata"]["uid"] not in node.checkpoint(), 30, "its claim unprepared")
        # The tolerant Pod stays, on its lost card, for as long as it wants.
        pod = node.get_pod("tolerant")
        assert pod["status"]["phase"] == "Running"
        assert not pod["metadata"].get("deletionTimestamp")
        assert prepared(node, tolerant)
    finally:
        node.handler.command("clear")
    node.delete_pod("tolerant")
    node.delete_claim("tolerant")
    node.delete_claim("intolerant")
