# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Sharing made real at prepare: MPS daemons and limits, time-slice intervals, one strategy per
card, and everything given back after the last share (simulated card settings, daemon Pods on
the in-memory API)."""

import pytest

from deckhouse_gpu.domain.prepare.mps import MpsDaemon
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, PODS, RESOURCE_CLAIMS
from deckhouse_gpu.ports.sharing import ComputeMode
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.services.runtime.events import EventRecorder
from testkit.prepare_world import PrepareWorld, allocate, build_world
from tests.services.prepare.sharing_world import (
    A30,
    A30B,
    API,
    MPS,
    NAMESPACE,
    SharingNode,
    share_claim,
    time_slicing,
)

DAEMON = "gpu-mps-w1-gpu-0000-17-00-0"


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    return build_world(tmp_path, {A30: "a30", A30B: "a30"})


@pytest.fixture
def node(world) -> SharingNode:
    return SharingNode(world)


def prepare(service: PrepareService, claim: ClaimRef) -> str:
    return service.prepare([claim])[claim.uid].error


def test_two_mps_shares_get_one_daemon_and_limits_from_their_share(world, node):
    service = node.service()
    small = share_claim(world.api, "small", "s1", "25", MPS)
    big = share_claim(world.api, "big", "s2", "75", MPS)
    assert prepare(service, small) == ""
    assert prepare(service, big) == ""
    assert node.pods() == [DAEMON]
    assert node.settings.compute_mode(A30) == ComputeMode.EXCLUSIVE_PROCESS
    uuid = world.api.list(PODS, namespace=NAMESPACE).items[0]["spec"]["containers"][0]
    assert any(e == {"name": "CUDA_VISIBLE_DEVICES", "value": e["value"]} for e in uuid["env"])
    small_env, big_env = node.cdi_env(small.uid), node.cdi_env(big.uid)
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in small_env
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=75" in big_env
    assert any(
        e.startswith("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-") and e.endswith("=6144M") for e in small_env
    )
    assert any(e.endswith("=18432M") for e in big_env)
    assert "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps" in small_env

    assert service.unprepare([small]) == {small.uid: ""}
    assert node.pods() == [DAEMON]  # the other share still uses it
    assert node.settings.compute_mode(A30) == ComputeMode.EXCLUSIVE_PROCESS
    assert service.unprepare([big]) == {big.uid: ""}
    assert node.pods() == []
    assert node.settings.compute_mode(A30) == ComputeMode.DEFAULT


def test_a_time_slicing_share_beside_mps_is_refused_naming_the_claim_and_changes_nothing(world, node):
    service = node.service()
    assert prepare(service, share_claim(world.api, "mps", "s1", "50", MPS)) == ""
    calls = list(node.settings.calls)
    sliced = share_claim(world.api, "sliced", "s2", "50", time_slicing("Long"))
    error = prepare(service, sliced)
    assert "card 0000:17:00.0 is shared with MPS by claim ns/mps" in error
    assert "TimeSlicing with interval Long" in error
    assert node.settings.calls == calls
    assert node.settings.time_slice(A30) == "Default"
    assert not node.has_spec(sliced.uid)


def test_time_slicing_sets_the_interval_and_the_last_share_gives_back_default(world, node):
    service = node.service()
    first = share_claim(world.api, "a", "s1", "50", time_slicing("Long"))
    second = share_claim(world.api, "b", "s2", "50", time_slicing("Long"))
    other = share_claim(world.api, "c", "s3", "10", time_slicing("Short"))
    assert prepare(service, first) == ""
    assert prepare(service, second) == ""
    assert node.settings.time_slice(A30) == "Long"
    assert "shared with TimeSlicing with interval Long by claim ns/a" in prepare(service, other)
    assert node.cdi_env(first.uid) == ["NVIDIA_VISIBLE_DEVICES=void"] or "CUDA_MPS" not in str(
        node.cdi_env(first.uid)
    )
    service.unprepare([first])
    assert node.settings.time_slice(A30) == "Long"
    service.unprepare([second])
    assert node.settings.time_slice(A30) == "Default"
    assert node.pods() == []


def test_a_share_without_config_joins_default_time_slicing_but_not_mps(world, node):
    service = node.service()
    assert prepare(service, share_claim(world.api, "plain", "s1", "50", None)) == ""
    assert prepare(service, share_claim(world.api, "default", "s2", "25", time_slicing())) == ""
    assert "shared with no sharing config" in prepare(service, share_claim(world.api, "mps", "s3", "25", MPS))


def test_limits_above_the_share_are_refused_before_anything_changes(world, node):
    greedy = {**MPS, "sharing": {"strategy": "MPS", "mps": {"defaultActiveThreadPercentage": 60}}}
    claim = share_claim(world.api, "greedy", "s1", "25", greedy)
    error = prepare(node.service(), claim)
    assert "defaultActiveThreadPercentage 60 is above the claim's share of the card (25 %)" in error
    assert node.settings.calls == []
    assert node.pods() == []


def test_a_config_naming_a_request_the_claim_lacks_is_refused(world, node):
    claim = share_claim(world.api, "typo", "s1", "25", MPS, requests=["gpus"])
    assert '"gpus" is not a request of this claim (its requests: gpu)' in prepare(node.service(), claim)


def test_a_daemon_that_never_gets_ready_fails_prepare_and_everything_is_undone(world):
    node = SharingNode(world, kubelet=False, ready_timeout=0.05)  # nobody runs the Pod
    claim = share_claim(world.api, "late", "s1", "25", MPS)
    error = prepare(node.service(), claim)
    assert f"MPS daemon Pod {DAEMON} (for gpu-0000-17-00-0) not ready after 0.05s" in error
    assert node.pods() == []
    assert node.settings.compute_mode(A30) == ComputeMode.DEFAULT
    assert not node.has_spec(claim.uid)
    assert "late" not in str(world.checkpoint_path.read_text())


def test_a_daemon_in_a_restart_loop_fails_prepare_with_its_reason(world, node):
    claim = share_claim(world.api, "crashy", "s1", "25", MPS)
    kubelet = node.daemons

    def start_crashing(daemon: MpsDaemon) -> bool:
        created: bool = kubelet.inner.start(daemon)
        kubelet.crash(daemon.name)
        return created

    kubelet.start = start_crashing
    error = prepare(node.service(), claim)
    assert "nvidia-cuda-mps-control exited" in error
    assert node.pods() == []
    assert node.settings.compute_mode(A30) == ComputeMode.DEFAULT


def test_a_card_setting_that_fails_fails_prepare_and_leaves_the_card_as_it_was(world, node):
    node.settings.fail(A30, "nvidia-smi: Unable to set the time-slice: Insufficient Permissions")
    claim = share_claim(world.api, "denied", "s1", "50", time_slicing("Short"))
    assert "Insufficient Permissions" in prepare(node.service(), claim)
    node.settings.fail(A30, None)
    assert node.settings.time_slice(A30) == "Default"
    assert not node.has_spec(claim.uid)


def test_start_cleans_up_what_no_claim_owns_and_restarts_what_claims_need(world, node):
    service = node.service()
    kept = share_claim(world.api, "kept", "s1", "50", MPS)
    assert prepare(service, kept) == ""
    node.settings.set_time_slice(A30B, "Long")  # left by a crashed handler: no entry asks for it
    world.api.delete(PODS, DAEMON, namespace=NAMESPACE)
    # A daemon of a claim that is gone.
    ghost = MpsDaemon("gpu-mps-w1-gpu-0000-31-00-0", "w1", A30B, "gpu-0000-31-00-0", "GPU-x", "/p/mps/x")
    world.api.create(PODS, node.daemons.inner.pod(ghost))
    node.service().start()
    assert node.pods() == [DAEMON]
    assert node.settings.time_slice(A30B) == "Default"
    assert node.settings.compute_mode(A30) == ComputeMode.EXCLUSIVE_PROCESS


def test_a_daemon_deleted_by_hand_is_recreated_and_its_claims_are_told(world, node):
    service = node.service(events=EventRecorder(world.api, "gpu-handler", "w1", SystemClock()))
    claim = share_claim(world.api, "user", "s1", "50", MPS)
    assert prepare(service, claim) == ""
    assert service.keep_daemons() == []  # all there: nothing to do
    world.api.delete(PODS, DAEMON, namespace=NAMESPACE)
    assert service.keep_daemons() == [DAEMON]
    assert node.pods() == [DAEMON]
    events = [e for e in world.api.list(EVENTS, namespace="ns").items if e["reason"] == "MPSDaemonRecreated"]
    assert [e["involvedObject"]["name"] for e in events] == ["user"]


def test_the_daemon_keeper_asks_the_api_nothing_while_the_node_has_no_shares(world, node):
    service = node.service()
    before = dict(world.api.calls)
    assert service.keep_daemons() == []
    assert dict(world.api.calls) == before  # its every-15-s round costs an idle node nothing


def test_mps_on_a_mig_instance_gets_a_daemon_of_its_own_and_leaves_the_card_mode(world, node):
    claim = allocate(world.api, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0")
    config = {
        "apiVersion": API,
        "kind": "MIGConfig",
        "sharing": {"strategy": "MPS", "mps": {"defaultPinnedDeviceMemoryLimit": "2Gi"}},
    }
    allocation = claim["status"]["allocation"]
    allocation["devices"]["config"] = [
        {"source": "FromClaim", "opaque": {"driver": "gpu.deckhouse.io", "parameters": config}}
    ]
    world.api.patch(
        RESOURCE_CLAIMS, "mig", {"status": {"allocation": allocation}}, subresource="status", namespace="ns"
    )
    ref = ClaimRef("ns", claim["metadata"]["uid"], "mig")
    service = node.service()
    assert prepare(service, ref) == ""
    assert node.pods() == ["gpu-mps-w1-gpu-0000-17-00-0-mig-1g-6gb-0"]
    pod = world.api.get(PODS, "gpu-mps-w1-gpu-0000-17-00-0-mig-1g-6gb-0", namespace=NAMESPACE)
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["CUDA_VISIBLE_DEVICES"].startswith("MIG-")
    assert node.settings.compute_mode(A30) == ComputeMode.DEFAULT  # a card-wide mode: not for one instance
    assert f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={env['CUDA_VISIBLE_DEVICES']}=2048M" in node.cdi_env(ref.uid)
    assert not [e for e in node.cdi_env(ref.uid) if e.startswith("CUDA_MPS_ACTIVE_THREAD")]
    assert service.unprepare([ref]) == {ref.uid: ""}
    assert node.pods() == []
    assert world.mig.instances(A30) == []
